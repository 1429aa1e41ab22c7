package certmanager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitServed waits until a TLS handshake with each of addrs, verified
// against bundle for serverName as the API server verifies a webhook,
// gets the certificate with serial.
func WaitServed(ctx context.Context, addrs []string, bundle []byte, serverName string, serial *big.Int) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return errors.New("caBundle holds no certificate")
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, addr := range addrs {
			dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second},
				Config: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}}
			conn, err := dialer.DialContext(ctx, "tcp", addr)
			if err != nil {
				last = err
				return false, nil
			}
			leaf := conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
			conn.Close()
			if leaf.SerialNumber.Cmp(serial) != 0 {
				last = fmt.Errorf("%s serves serial %x, want %x", addr, leaf.SerialNumber, serial)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}
