//go:build race

package feishu

// raceEnabled: the lark SDK's websocket client (v3.5.3) races with itself
// between its ping loop and disconnect (ws/client.go), which the race
// detector reports in any test that starts it. Those tests run without the
// detector instead (`make test` runs them separately).
const raceEnabled = true
