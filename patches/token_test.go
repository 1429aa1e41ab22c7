package patches

import "testing"

func TestTokenSecretNames(t *testing.T) {
	accounts := tokenSecrets{"default", "spark.driver"}
	for name, want := range map[string]bool{
		"default-token":            true,
		"default-token-x7k2p":      true,
		"spark.driver-token-abc12": true,
		"spark.driver-token":       true,
		"default-token-":           false,
		"default-token-ABC":        false,
		"default-tokens":           false,
		"default-token-a_b":        false,
		"sparkxdriver-token":       false, // the dot is not a wildcard
		"other-token":              false,
		"my-default-token":         false,
		"":                         false,
	} {
		if got := accounts.MatchString(name); got != want {
			t.Errorf("%q: %v, want %v", name, got, want)
		}
	}
}
