package selfcert

import (
	"encoding/base64"
	"strings"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func join(ops []string) string { return strings.Join(ops, ",") }
