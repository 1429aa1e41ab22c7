package spec

import (
	"reflect"
	"strings"
	"testing"
)

func TestPolicyEnvRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Policy
		want string // the env value
		back Policy // what the init container reads
	}{
		{"defaults written out", Policy{}, `{"maxSize":"2Gi","timeout":"10m0s"}`, Policy{MaxSize: "2Gi", Timeout: "10m0s"}},
		{"sha256 not required", Policy{RequireSHA256: ptr(false)}, `{"requireSHA256":false,"maxSize":"2Gi","timeout":"10m0s"}`,
			Policy{RequireSHA256: ptr(false), MaxSize: "2Gi", Timeout: "10m0s"}},
		{"everything", Policy{AllowedURLPrefixes: []string{"https://a/", "https://b/x-"}, RequireSHA256: ptr(true), MaxSize: "100Mi", Timeout: "2m"},
			`{"allowedURLPrefixes":["https://a/","https://b/x-"],"requireSHA256":true,"maxSize":"100Mi","timeout":"2m"}`,
			Policy{AllowedURLPrefixes: []string{"https://a/", "https://b/x-"}, RequireSHA256: ptr(true), MaxSize: "100Mi", Timeout: "2m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodePolicy(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("encoded\n  %s\nwant\n  %s", got, tc.want)
			}
			back, err := DecodePolicy(got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.back) {
				t.Errorf("decoded %+v, want %+v", back, tc.back)
			}
		})
	}
}

func TestDecodePolicyNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        Policy
		wantErr     string
	}{
		{"empty is the empty policy", "", Policy{}, ""},
		{"blank is the empty policy", " \n", Policy{}, ""},
		{"unknown field", `{"maxSiz":"1Gi"}`, Policy{}, `unknown field fetch.maxSiz; the fetch policy has allowedURLPrefixes, requireSHA256, maxSize and timeout`},
		{"number for a string", `{"maxSize":1024}`, Policy{}, `fetch.maxSize: want a string, not a JSON number`},
		{"string for a bool", `{"requireSHA256":"yes"}`, Policy{}, `fetch.requireSHA256: want a bool, not a JSON string`},
		{"string for a list", `{"allowedURLPrefixes":"https://a/"}`, Policy{}, `fetch.allowedURLPrefixes: want a []string, not a JSON string`},
		{"a list, not an object", `["https://a/"]`, Policy{}, `is a JSON array; want an object`},
		{"two values", `{} {}`, Policy{}, `more than one JSON value; want one object`},
		{"not JSON", `maxSize=1Gi`, Policy{}, `not a JSON object: invalid character`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodePolicy(tc.value)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted as %+v, want %q", got, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, tc.wantErr)
			case !reflect.DeepEqual(got, tc.want):
				t.Fatalf("decoded %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestInitArgs(t *testing.T) {
	want := []string{"--annotation-file=/etc/sparklet/podinfo/fetch", "--dest=/opt/sparklet/deps"}
	if got := InitArgs("/etc/sparklet/podinfo/fetch"); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
