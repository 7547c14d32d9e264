package closest

import "testing"

func TestName_SuggestsOnlyASlipOfTheKeyboard(t *testing.T) {
	keys := []string{"requesters", "admins", "allowed_hosts", "allow_private_networks"}
	for _, tc := range []struct{ typed, want string }{
		{"requestors", "requesters"},
		{"admin", "admins"},
		{"alowed_hosts", "allowed_hosts"},
		{"Admins", "admins"},
		{"timezone", ""},
		{"zz", ""},
	} {
		if got := Name(tc.typed, keys); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
	for _, tc := range []struct{ typed, want string }{
		{"Asia/Shangai", "Asia/Shanghai"},
		{"America/New_Yrok", "America/New_York"},
		{"asia/shanghai", "Asia/Shanghai"},
		{"Mars/Olympus", ""},
	} {
		if got := Name(tc.typed, Zones); got != tc.want {
			t.Errorf("zone Name(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}
