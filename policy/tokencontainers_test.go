package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestTokenContainers(t *testing.T) {
	p, err := Parse([]byte("tokenContainers: [init, wait]"), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.For("team-a").TokenContainers; !slices.Equal(got, []string{"init", "wait"}) {
		t.Errorf("effective tokenContainers = %v, want [init wait]", got)
	}
	for doc, want := range map[string]string{
		"tokenContainers: [sparklet-sidecar]": `tokenContainers[0]: "sparklet-sidecar" is sparklet's own container`,
		"tokenContainers: [wait, Init_1]":     "tokenContainers[1]: not a container name",
	} {
		if _, err := Parse([]byte(doc), "dev"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to contain %q", doc, err, want)
		}
	}
}
