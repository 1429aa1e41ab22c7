// Package fetch is sparklet's dependency fetching: the sparklet.io/fetch
// annotation, the platform's fetch policy, and `sparklet init`, which
// downloads, verifies and unpacks the files before the driver starts.
package fetch

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Annotation lists a pod's remote dependencies.
const Annotation = "sparklet.io/fetch"

// MountPath is where the files land, in the init container and the Spark
// container alike (an emptyDir shared by both).
const MountPath = "/opt/sparklet/deps"

// Entry is one dependency from the annotation.
type Entry struct {
	URL string `json:"url"`
	// SHA256 is the expected hex digest of the downloaded file.
	SHA256 string `json:"sha256,omitempty"`
	// Dest is the path under MountPath; default: the URL's file name, or
	// for an archive, a directory named after it without the extension.
	Dest string `json:"dest,omitempty"`
	// Extract unpacks the file: "tar.gz" or "zip".
	Extract string `json:"extract,omitempty"`
}

// ParseAnnotation accepts a YAML or JSON list of entries, or one URL per
// line (blank lines and # comments ignored). Errors name the entry and the
// field.
func ParseAnnotation(value string) ([]Entry, error) {
	var entries []Entry
	trimmed := strings.TrimSpace(value)
	if trimmed == "" {
		return nil, fmt.Errorf("%s: empty; list at least one URL", Annotation)
	}
	if strings.HasPrefix(trimmed, "[") || strings.HasPrefix(trimmed, "-") {
		data, err := yaml.YAMLToJSON([]byte(value))
		if err != nil {
			return nil, fmt.Errorf("%s: not a valid YAML or JSON list: %w", Annotation, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&entries); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Value == "number" {
				return nil, fmt.Errorf("%s: %s must be a quoted string; YAML read an unquoted value as a number", Annotation, te.Field)
			}
			return nil, fmt.Errorf("%s: %v (entries have url, sha256, dest and extract)", Annotation, err)
		}
	} else {
		for _, line := range strings.Split(value, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			entries = append(entries, Entry{URL: line})
		}
	}
	seen := map[string]int{}
	for i := range entries {
		e := &entries[i]
		at := fmt.Sprintf("%s entry %d (%s)", Annotation, i+1, e.URL)
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		if j, dup := seen[e.Dest]; dup {
			return nil, fmt.Errorf("%s: dest %q is also used by entry %d; set a distinct dest", at, e.Dest, j)
		}
		seen[e.Dest] = i + 1
	}
	return entries, nil
}

// validate checks an entry and fills in its default dest.
func (e *Entry) validate() error {
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: must be an http or https URL", e.URL)
	}
	if e.SHA256 != "" {
		e.SHA256 = strings.ToLower(e.SHA256)
		if b, err := hex.DecodeString(e.SHA256); err != nil || len(b) != 32 {
			return fmt.Errorf("sha256 %q is not 64 hex digits", e.SHA256)
		}
	}
	switch e.Extract {
	case "", "tar.gz", "zip":
	default:
		return fmt.Errorf("extract %q: must be tar.gz or zip", e.Extract)
	}
	if e.Dest == "" {
		base := path.Base(u.Path)
		if base == "/" || base == "." || base == "" {
			return fmt.Errorf("the URL has no file name; set dest")
		}
		switch e.Extract {
		case "tar.gz":
			base = strings.TrimSuffix(strings.TrimSuffix(base, ".tar.gz"), ".tgz")
		case "zip":
			base = strings.TrimSuffix(base, ".zip")
		}
		e.Dest = base
	}
	if path.IsAbs(e.Dest) || path.Clean(e.Dest) != e.Dest || e.Dest == "." || strings.HasPrefix(e.Dest, "../") || e.Dest == ".." {
		return fmt.Errorf("dest %q must be a clean relative path inside %s", e.Dest, MountPath)
	}
	return nil
}

// SparkConf returns the Spark properties that reference the fetched files:
// .jar files in spark.jars, .py, .zip and .egg files in
// spark.submit.pyFiles, other files in spark.files. Extracted archives are
// directories and are not referenced; point your own conf at them.
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
		sort.Strings(v)
		conf[k] = strings.Join(v, ",")
	}
	return conf
}
