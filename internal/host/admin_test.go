package host

import "testing"

func TestCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "Cookie": true, "X-Api-Key": true,
		"GITHUB_TOKEN": true, "CLIENT_SECRET": true, "DB_PASSWORD": true,
		"Accept": false, "X-Team": false, "MEMORY_FILE_PATH": false, "LOG_LEVEL": false,
	} {
		if got := credentialName(name); got != want {
			t.Errorf("credentialName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestScalar(t *testing.T) {
	for raw, want := range map[string]string{`"a b"`: "a b", `true`: "true", `1.50`: "1.50", `7`: "7"} {
		if v, null, err := scalar([]byte(raw)); err != nil || null || v != want {
			t.Errorf("scalar(%s) = %q %v %v, want %q", raw, v, null, err, want)
		}
	}
	if _, null, err := scalar([]byte(`null`)); !null || err != nil {
		t.Errorf("null: %v %v", null, err)
	}
	if _, _, err := scalar([]byte(`{"a":1}`)); err == nil {
		t.Error("an object was accepted")
	}
}
