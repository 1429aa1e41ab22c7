package emulator

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// A small RFC 6455 client: enough for a Kubernetes watch, where the server
// sends messages and the client only answers pings and closes. It is
// written here, rather than using golang.org/x/net/websocket, because
// fabric8's fallback depends on the status of a refused upgrade, which
// x/net/websocket does not expose.

// upgradeError is a refused upgrade, with the server's status
// (fabric8's WebSocketHandshakeException carries the response).
type upgradeError struct {
	code int
	body string
}

func (e *upgradeError) Error() string {
	return fmt.Sprintf("websocket upgrade refused: HTTP %d: %s", e.code, strings.TrimSpace(e.body))
}

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" // RFC 6455 section 1.3

type wsConn struct {
	conn net.Conn
	r    *bufio.Reader
	wmu  sync.Mutex
}

// dialWebSocket upgrades a GET of u with the given headers; tlsCfg is used
// for https URLs. A status other than 101 is an *upgradeError.
func dialWebSocket(ctx context.Context, dialer *net.Dialer, u *url.URL, tlsCfg *tls.Config, hdr http.Header) (*wsConn, error) {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	host := net.JoinHostPort(u.Hostname(), port)
	// The connect timeout is the request timeout (OkHttp
	// connectTimeout; Vert.x WebSocketConnectOptions timeout).
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	raw, err := dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	conn := raw
	if u.Scheme == "https" {
		cfg := &tls.Config{}
		if tlsCfg != nil {
			cfg = tlsCfg.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		conn = tc
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	b.WriteString("Upgrade: websocket\r\nConnection: Upgrade\r\n")
	fmt.Fprintf(&b, "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n", key)
	for k, vs := range hdr {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		_ = conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = conn.Close()
		return nil, &upgradeError{code: resp.StatusCode, body: string(body)}
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		_ = conn.Close()
		return nil, fmt.Errorf("websocket upgrade: bad Sec-WebSocket-Accept %q for key %q", resp.Header.Get("Sec-WebSocket-Accept"), key)
	}
	if !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		_ = conn.Close()
		return nil, errors.New("websocket upgrade: no Upgrade: websocket in the answer")
	}
	_ = conn.SetDeadline(time.Time{})
	return &wsConn{conn: conn, r: br}, nil
}

const (
	opCont   = 0x0
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
	opPong   = 0xA
	maxMsg   = 64 << 20
)

// errClosed is a close frame from the server.
var errClosed = errors.New("websocket closed by the server")

// next returns the next data message; text and binary frames alike are
// decoded as UTF-8 JSON (fabric8 WatcherWebSocketListener.onMessage).
// Pings are answered.
func (c *wsConn) next() ([]byte, error) {
	var msg []byte
	for {
		fin, op, payload, err := c.frame()
		if err != nil {
			return nil, err
		}
		switch op {
		case opPing:
			if err := c.write(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			_ = c.write(opClose, payload)
			return nil, errClosed
		case opText, opBinary, opCont:
			msg = append(msg, payload...)
			if len(msg) > maxMsg {
				return nil, errors.New("websocket message over 64 MiB")
			}
			if fin {
				return msg, nil
			}
		default:
			return nil, fmt.Errorf("websocket: unknown opcode %d", op)
		}
	}
}

func (c *wsConn) frame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(c.r, h[:]); err != nil {
		return
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	masked := h[1]&0x80 != 0
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var e [2]byte
		if _, err = io.ReadFull(c.r, e[:]); err != nil {
			return
		}
		n = uint64(binary.BigEndian.Uint16(e[:]))
	case 127:
		var e [8]byte
		if _, err = io.ReadFull(c.r, e[:]); err != nil {
			return
		}
		n = binary.BigEndian.Uint64(e[:])
	}
	if n > maxMsg {
		err = errors.New("websocket frame over 64 MiB")
		return
	}
	var mask [4]byte
	if masked {
		if _, err = io.ReadFull(c.r, mask[:]); err != nil {
			return
		}
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(c.r, payload); err != nil {
		return
	}
	if masked {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return
}

// write sends one masked frame, as a client must.
func (c *wsConn) write(op byte, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	buf := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		buf = append(buf, 0x80|byte(n))
	case n < 1<<16:
		buf = append(buf, 0x80|126, byte(n>>8), byte(n))
	default:
		buf = append(buf, 0x80|127)
		buf = binary.BigEndian.AppendUint64(buf, uint64(n))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	buf = append(buf, mask[:]...)
	for i, b := range payload {
		buf = append(buf, b^mask[i%4])
	}
	_ = c.conn.SetWriteDeadline(time.Now().Add(requestTimeout))
	_, err := c.conn.Write(buf)
	return err
}

// close sends a normal close (1000), as fabric8's closeWebSocket does, and
// drops the connection.
func (c *wsConn) close() {
	_ = c.write(opClose, []byte{0x03, 0xe8})
	_ = c.conn.Close()
}
