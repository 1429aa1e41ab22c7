package sparkconf

import (
	"crypto/sha256"
	"encoding/hex"
)

// Digest is the hex sha256 of a configuration text.
func Digest(conf string) string {
	sum := sha256.Sum256([]byte(conf))
	return hex.EncodeToString(sum[:])
}
