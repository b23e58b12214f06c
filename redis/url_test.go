package redis

import (
	"strings"
	"testing"
)

// TestURLErrorsNeverEchoUserinfo opens malformed URLs whose user
// information holds a password: neither Open's error nor the store's name
// for itself in messages may hold any part of it. Before, a base64
// password with an unencoded / ended the host part early and came back in
// "database ... is not a number".
func TestURLErrorsNeverEchoUserinfo(t *testing.T) {
	const secret = "TopSecretPw42"
	for _, url := range []string{
		"redis://user:/" + secret + "@host/0",
		"redis://user:/" + secret + "@host/x",
		"redis://user:ab/" + secret + "@host:1/x?y",
		"redis://user:" + secret + "%zz@host",
		"redis://" + secret + "@host:99999",
		"redis://user:" + secret + "@host:99999/x",
		"redis://user:" + secret + "/@",
		"redis://:" + secret + "@h/0?addr=:1",
		"redis://user:" + secret + "@a:1,b:2/3",
		"foo:" + secret + "@host://x",
		"redis://u:" + secret, // the @ forgotten
		"redis://u:" + secret + "/0",
	} {
		st, err := Open(Options{URL: url})
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			msg = st.where
			st.Close(bg)
		}
		for _, part := range []string{secret, secret[:6], secret[6:]} {
			if strings.Contains(msg, part) {
				t.Errorf("%s: message %q holds %q", url, msg, part)
			}
		}
	}
}

// TestPasswordWithSlash: a base64 password's unencoded / is part of the
// password, not the start of a path.
func TestPasswordWithSlash(t *testing.T) {
	got, err := parseURL("redis://user:ab/cd+ef==@host:1/2")
	if err != nil || got.user != "user" || got.password != "ab/cd+ef==" || got.db != 2 || got.addrs[0] != "host:1" {
		t.Fatalf("parseURL = %+v, %v", got, err)
	}
}
