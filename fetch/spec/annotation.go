package spec

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/vocab"
)

// MountPath is where the files land: the emptyDir sparklet-deps, mounted in
// the init container and the Spark container alike.
const MountPath = "/opt/sparklet/deps"

// Entry is one dependency from the sparklet.io/fetch annotation.
type Entry struct {
	// URL is an http or https URL.
	URL string `json:"url"`
	// SHA256 is the expected hex digest of the downloaded file.
	SHA256 string `json:"sha256,omitempty"`
	// Dest is the path under MountPath. Default: the URL's file name, or
	// for an archive, that name without .tar.gz, .tgz or .zip.
	Dest string `json:"dest,omitempty"`
	// Extract unpacks the file into the directory Dest: "tar.gz" or "zip".
	Extract string `json:"extract,omitempty"`
}

// Extract values.
const (
	TarGz = "tar.gz"
	Zip   = "zip"
)

// ParseAnnotation accepts a YAML or JSON list of entries (an item may also
// be a bare URL string), or the short form: one URL per line, blank lines
// and # comments ignored. It fills in default dests and lower-cases
// digests. Errors name the entry (1-based index and URL) and the field.
func ParseAnnotation(value string) ([]Entry, error) {
	first := firstLine(value)
	var entries []Entry
	var err error
	switch {
	case first == "":
		return nil, fmt.Errorf("%s: empty; list at least one URL", vocab.AnnotationFetch)
	case strings.HasPrefix(first, "{"):
		return nil, fmt.Errorf("%s: a single object; make it a list: wrap it in [ ] or start it with \"- \"", vocab.AnnotationFetch)
	case strings.HasPrefix(first, "[") || strings.HasPrefix(first, "-"):
		entries, err = parseList(value)
	default:
		entries, err = parseLines(value)
	}
	if err != nil {
		return nil, err
	}
	for i := range entries {
		if err := entries[i].validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", where(i, entries[i].URL), err)
		}
	}
	return entries, checkDests(entries)
}

// where names an entry in messages: 1-based, as people count.
func where(i int, u string) string {
	return fmt.Sprintf("%s entry %d (%s)", vocab.AnnotationFetch, i+1, u)
}

// firstLine is the first line that is neither blank nor a comment.
func firstLine(value string) string {
	for _, line := range strings.Split(value, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return line
		}
	}
	return ""
}

func parseLines(value string) ([]Entry, error) {
	var entries []Entry
	for n, line := range strings.Split(value, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			return nil, fmt.Errorf("%s: line %d %q: the short form is one URL per line; for sha256, dest or extract use a list of entries (- url: ...)", vocab.AnnotationFetch, n+1, line)
		}
		entries = append(entries, Entry{URL: line})
	}
	return entries, nil
}

// parseList decodes each item on its own so that an error names its entry.
func parseList(value string) ([]Entry, error) {
	data, err := yaml.YAMLToJSON([]byte(value))
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid YAML or JSON list: %v", vocab.AnnotationFetch, err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("%s: not a list of entries: %v", vocab.AnnotationFetch, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: empty list; list at least one URL", vocab.AnnotationFetch)
	}
	entries := make([]Entry, len(items))
	for i, raw := range items {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			entries[i] = Entry{URL: s}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&entries[i]); err != nil {
			// Name the entry by its url when it has one.
			var probe struct {
				URL any `json:"url"`
			}
			_ = json.Unmarshal(raw, &probe)
			u, _ := probe.URL.(string)
			return nil, fmt.Errorf("%s: %s", where(i, u), decodeProblem(err))
		}
	}
	return entries, nil
}

func decodeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("is a %s; an entry is a URL or an object with url, sha256, dest and extract", te.Value)
		}
		if te.Value == "number" || te.Value == "bool" {
			return fmt.Sprintf("%s must be a string; quote it, or YAML reads it as a %s", te.Field, te.Value)
		}
		return fmt.Sprintf("%s must be a string, not a %s", te.Field, te.Value)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Sprintf("unknown field %s; an entry has url, sha256, dest and extract", msg)
	}
	return err.Error()
}

// validate checks one entry and fills in its default dest.
func (e *Entry) validate() error {
	u, err := url.Parse(e.URL)
	switch {
	case e.URL == "":
		return errors.New("url is missing")
	case err != nil:
		return fmt.Errorf("url %q: %v", e.URL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("url %q: the scheme must be http or https", e.URL)
	case u.Host == "":
		return fmt.Errorf("url %q: has no host", e.URL)
	case u.User != nil:
		return fmt.Errorf("url %q: must not carry credentials; anyone who can read the pod can read its annotations", e.URL)
	}
	if err := checkPath(u.EscapedPath()); err != nil {
		return fmt.Errorf("url %q: %v", e.URL, err)
	}
	if e.SHA256 != "" {
		e.SHA256 = strings.ToLower(e.SHA256)
		if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != 32 {
			return fmt.Errorf("sha256 %q is not 64 hex digits", e.SHA256)
		}
	}
	switch e.Extract {
	case "", TarGz, Zip:
	default:
		return fmt.Errorf("extract %q: must be %s or %s (or left out to keep the file as it is)", e.Extract, TarGz, Zip)
	}
	if e.Dest == "" {
		base := path.Base(u.Path)
		switch e.Extract {
		case TarGz:
			base = strings.TrimSuffix(strings.TrimSuffix(base, ".tar.gz"), ".tgz")
		case Zip:
			base = strings.TrimSuffix(base, ".zip")
		}
		if base == "" || base == "/" || base == "." {
			return errors.New("the URL has no file name to use; set dest")
		}
		if err := checkDest(base); err != nil {
			return fmt.Errorf("the file name %q cannot be used (%v); set dest", base, err)
		}
		e.Dest = base
		return nil
	}
	if err := checkDest(e.Dest); err != nil {
		return fmt.Errorf("dest %q: %v", e.Dest, err)
	}
	return nil
}

// checkDest accepts a clean relative path without .. that can appear in a
// comma-separated Spark file list as a file:// URI.
func checkDest(d string) error {
	if path.IsAbs(d) {
		return fmt.Errorf("must be relative to %s", MountPath)
	}
	if path.Clean(d) != d || d == "." || d == ".." || strings.HasPrefix(d, "../") {
		return fmt.Errorf("must be a clean path inside %s, without ., .. or doubled or trailing slashes", MountPath)
	}
	if i := strings.IndexFunc(d, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(`,#?%\`, r) }); i >= 0 {
		return fmt.Errorf("contains %q, which a Spark file list cannot carry", d[i])
	}
	return nil
}

// checkDests refuses two entries writing the same path or one inside the
// other.
func checkDests(entries []Entry) error {
	for i := range entries {
		for j := range i {
			a, b := entries[j].Dest, entries[i].Dest
			switch {
			case a == b:
				return fmt.Errorf("%s: dest %q is also entry %d's; set a distinct dest", where(i, entries[i].URL), b, j+1)
			case strings.HasPrefix(b, a+"/"), strings.HasPrefix(a, b+"/"):
				return fmt.Errorf("%s: dest %q and entry %d's dest %q would be inside one another; set distinct dests", where(i, entries[i].URL), b, j+1, a)
			}
		}
	}
	return nil
}

// SparkConf returns the Spark conf that references the fetched files from
// MountPath as file:// URIs: .jar files in spark.jars; .py, .zip and .egg
// files in spark.submit.pyFiles; any other file in spark.files. Extracted
// archives are directories and are not referenced. Each value keeps the
// annotation's order, which for spark.jars is the classpath order.
func SparkConf(entries []Entry) map[string]string {
	lists := map[string][]string{}
	for _, e := range entries {
		if e.Extract != "" {
			continue
		}
		key := "spark.files"
		switch strings.ToLower(path.Ext(e.Dest)) {
		case ".jar":
			key = "spark.jars"
		case ".py", ".zip", ".egg":
			key = "spark.submit.pyFiles"
		}
		lists[key] = append(lists[key], "file://"+path.Join(MountPath, e.Dest))
	}
	conf := map[string]string{}
	for k, v := range lists {
		conf[k] = strings.Join(v, ",")
	}
	return conf
}
