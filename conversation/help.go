package conversation

import (
	"strings"

	"github.com/herald-bridge/herald/conversation/text"
)

// helpLines lists every form a person can type (docs/chat.md, Chat commands).
// helpLines are every form a person can type (docs/chat.md, Chat commands):
// each key words the form and what it does; key.example, when the
// catalogue has it, is an example.
var helpLines = []string{
	"help.watch_every_30m",
	"help.watch_daily_08_00_area_city",
	"help.watch_weekly_mon_08_00",
	"help.watch_at_date_time",
	"help.watch_cron_5_fields_area_city",
	"help.watch_as_kind",
	"help.watch_as_html_selector_css",
	"help.watch_name_text",
	"help.watch_canvas_moodle_site_courses_12345_6",
	"help.watch_rsshub_route",
	"help.token_site",
	"help.token_site_off",
	"help.login_site",
	"help.login_site_off",
	"help.remind_calendar_url_before_72h_24h_2h",
	"help.tasks",
	"help.task",
	"help.pause_resume_delete_run",
	"help.approve_request_id",
	"help.reject_request_id_reason",
	"help.inbox",
	"help.inbox_or_read",
	"help.read_all",
	"help.inbox_token",
	"help.mute_task_id_duration_off",
	"help.quiet_hh_mm_hh_mm_off",
	"help.digest_schedule_off",
	"help.lang_en_zh_auto",
	"help.history_words_page_2",
	"help.forget",
	"help.downloads",
	"help.cancel",
	"help.whoami",
}

// help lists every form, one example each, in the turn's language.
func (t *turn) help() []Reply {
	var b strings.Builder
	b.WriteString(t.tr("help.i_watch_web_pages"))
	for _, l := range helpLines {
		if l == "help.watch_as_kind" {
			b.WriteString(t.tr(l, kindChoice))
		} else {
			b.WriteString(t.tr(l))
		}
		if text.Of(t.lang).Has(l + ".example") {
			b.WriteString(t.tr("help.e_g") + t.tr(l+".example"))
		}
		b.WriteString("\n")
	}
	b.WriteString(t.tr("help.schedules_may_be_typed"))
	return []Reply{{Text: b.String()}}
}
