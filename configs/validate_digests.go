package configs

import (
	"fmt"
	"maps"
	"slices"
)

// MaxDigestItems bounds recipients.<name>.digest_max_items.
const MaxDigestItems = 1000

// digests checks when a recipient's notices go and what a model adds to
// them (SPEC §20): a digest schedule and its bound, and the model's part
// (translate on a recipient, summarize on a task), which needs the
// assistant: set without it, it is off, and check-config says so.
func (v *validator) digests() {
	var model []string
	for _, name := range slices.Sorted(maps.Keys(v.cfg.Recipients)) {
		r := v.cfg.Recipients[name]
		rp := "recipients." + name
		if r.Digest != "" && !v.unsetErr(rp+".digest") {
			if err := parseSchedule(r.Digest, v.cfg.Location); err != nil {
				v.errf(rp+".digest", "%v", err)
			}
		}
		if n := r.DigestMaxItems; n < 0 || n > MaxDigestItems {
			v.errf(rp+".digest_max_items", "must be between 1 and %d", MaxDigestItems)
		}
		switch r.Translate {
		case "":
		case "en", "zh":
			model = append(model, rp+".translate")
		default:
			v.errf(rp+".translate", "unknown language %s (want en or zh)", v.d.quote(rp+".translate", r.Translate))
		}
	}
	for i, t := range v.cfg.Tasks {
		if t.Summarize {
			model = append(model, fmt.Sprintf("tasks[%d].summarize", i))
		}
	}
	if len(model) > 0 && !v.cfg.Assistant.Enabled {
		for _, p := range model {
			v.cfg.Warnings = append(v.cfg.Warnings, fmt.Sprintf("%s:%d: %s: the assistant is not configured, so notices go out without the model's text", v.d.file, v.line(p), where(p)))
		}
	}
}
