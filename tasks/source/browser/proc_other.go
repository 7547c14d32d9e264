//go:build !linux

package browser

// Elsewhere the browser's processes end with it (chromedp kills the
// browser when a page is done); leftovers of a killed herald are not
// looked for, and memory is bounded by the JavaScript heap flag only.

func killUnder(string) int       { return 0 }
func residentUnder(string) int64 { return 0 }

func pidsUnder(string) []int { return nil }
