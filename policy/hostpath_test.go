package policy

import (
	"strings"
	"testing"
)

func TestHostPathReaches(t *testing.T) {
	for path, want := range map[string]string{
		"/":                                 "holds the kubelet's pod directory",
		"/var":                              "holds the kubelet's pod directory",
		"//var/lib/kubelet":                 "holds the kubelet's pod directory",
		"/var/lib/kubelet/pods/":            "is the kubelet's pod directory",
		"/var/lib/kubelet/pods/uid/volumes": "is inside the kubelet's pod directory",
		"/var/lib/kubelet/plugins/../pods":  "is the kubelet's pod directory",
		"var/lib":                           "holds the kubelet's pod directory",
		"/proc":                             "is the node's /proc",
		"/proc/1/root":                      "is inside the node's /proc",
		"/var/lib/kubelet/pods-backup":      "",
		"/var/lib/kubelet/plugins":          "",
		"/processes":                        "",
		"/mnt/disks/ssd0":                   "",
		"/var/log":                          "",
	} {
		got := HostPathReaches(path)
		if (want == "") != (got == "") || !strings.HasPrefix(got, want) {
			t.Errorf("HostPathReaches(%q) = %q, want %q...", path, got, want)
		}
	}
}
