package jsonlog

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

type stringer struct{ n int }

func (s stringer) String() string { return fmt.Sprint(s.n) }

// TestSameAsJSONFormatter: every entry comes out byte for byte as
// logrus.JSONFormatter writes it, on the fast path or not.
func TestSameAsJSONFormatter(t *testing.T) {
	at := time.Date(2026, 11, 25, 15, 4, 5, 123456789, time.UTC)
	entries := map[string]logrus.Fields{
		"admission": {"component": "webhook", "uid": "0d7d3b0c", "namespace": "spark-jobs", "operation": "CREATE", "dryRun": false, "name": "spark-pi", "ops": 11},
		"no fields": {},
		"escapes":   {"a": "quote \" backslash \\ tab \t newline \n", "b": "<html> & co", "c": "ünïcödé \u2028", "d": "\x01\x7f", "e": string([]byte{0xff, 'x'})},
		"error":     {"error": errors.New(`refused: "x" <y>`)},
		"numbers":   {"f": 1.5, "g": int32(-3), "h": uint(7), "i": int64(1 << 60), "j": 1e21},
		"values":    {"k": nil, "l": []string{"a", "b"}, "m": map[string]int{"z": 1, "a": 2}, "n": stringer{4}, "o": struct{ X int }{1}},
		"clash":     {"msg": "mine", "time": "then", "level": "x", "logrus_error": "e"},
		"odd keys":  {"ä": 1, "a<b": 2, "": 3, "A": 4, "a": 5},
		"bad value": {"p": func() {}},
	}
	for name, fields := range entries {
		for _, level := range []logrus.Level{logrus.InfoLevel, logrus.ErrorLevel} {
			l := logrus.New()
			e := l.WithFields(fields)
			e.Time, e.Level, e.Message = at, level, "message <"+name+"> \"quoted\""
			want, wantErr := (&logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano}).Format(e)
			got, gotErr := (&Formatter{logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano}}).Format(e)
			if string(got) != string(want) || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("%s/%s:\n got %s (%v)\nwant %s (%v)", name, level, got, gotErr, want, wantErr)
			}
		}
	}
}

func BenchmarkFormat(b *testing.B) {
	e := logrus.New().WithFields(logrus.Fields{"component": "webhook", "uid": "0d7d3b0c-1111-4222-8333-444455556666", "namespace": "spark-jobs",
		"operation": "CREATE", "dryRun": false, "name": "spark-pi", "ops": 11})
	e.Time, e.Level, e.Message = time.Now(), logrus.InfoLevel, "injected"
	for name, f := range map[string]logrus.Formatter{
		"logrus": &logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano},
		"fast":   &Formatter{logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano}},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := f.Format(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
