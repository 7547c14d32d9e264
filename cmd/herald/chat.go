package main

func cmdChat(e *env, args []string) int {
	au, sum := summaryOf("chat")
	fs := e.flags("chat", "")
	_ = fs.String("as", "", "talk as console:NAME")
	if _, code, ok := e.parse(fs, "chat", au, sum, args); !ok {
		return code
	}
	return usageErr(e, "chat", "the console channel is not available in this build")
}
