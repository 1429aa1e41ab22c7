package sparkemu

import (
	"crypto/tls"
	"errors"

	"golang.org/x/net/websocket"
)

// tlsConfig wraps the TLS settings for an https API server; nil is plain http.
type tlsConfig struct{ cfg *tls.Config }

// TLS returns settings for an https server.
func TLS(cfg *tls.Config) *tlsConfig { return &tlsConfig{cfg: cfg} }

func (t *tlsConfig) get() *tls.Config {
	if t == nil {
		return nil
	}
	return t.cfg
}

func asDialError(err error, target **websocket.DialError) bool { return errors.As(err, target) }
