package sidecar

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/sparklet/sparklet/internal/atomicfile"
)

// writeToken writes the JVM's random per-pod token atomically. The file is
// world-readable inside a volume only the sidecar and the Spark container
// mount, because the JVM runs as another user (185 in apache/spark). A
// restarted sidecar keeps the token it finds: the JVM read it once, at
// start (SparkKubernetesClientFactory), and cannot pick up a new one.
func writeToken(path string) ([]byte, error) {
	if old, err := os.ReadFile(path); err == nil && len(old) == 64 {
		if _, err := hex.DecodeString(string(old)); err == nil {
			return old, nil
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate token: %w", err)
	}
	token := []byte(hex.EncodeToString(b))
	if err := atomicfile.Write(path, token, 0o444); err != nil {
		return nil, fmt.Errorf("write token %s: %w", path, errors.Unwrap(err))
	}
	return token, nil
}
