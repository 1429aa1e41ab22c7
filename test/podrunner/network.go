package podrunner

import (
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// lockDir holds one lock file per bridge: a runner holds its bridge's lock
// (flock) for its whole life, so a bridge whose lock is free is a leftover
// of a runner that died, and other runners on the machine are left alone.
const lockDir = "/run/sparklet-podrunner"

// network is the runner's bridge and the pods' network namespaces. Pods
// get addresses of one /24 that nothing else on the machine uses; the
// bridge has .1. There is no default route and no NAT: a pod reaches
// other pods and the bridge address, nothing else.
type network struct {
	bridge string
	subnet *net.IPNet
	hostIP net.IP
	lock   *os.File

	mu   sync.Mutex
	used map[byte]bool
}

// reserveNetwork takes a bridge and its subnet: the ones given, or the
// first free "sparklet-br<N>" with 10.213.N.0/24. It removes what a dead
// runner left of that bridge and creates it afresh.
func reserveNetwork(bridge, subnet string) (*network, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, err
	}
	if subnet != "" {
		if bridge == "" {
			bridge = "sparklet-br0"
		}
		n, err := tryNetwork(bridge, subnet)
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, fmt.Errorf("bridge %s is in use by another pod runner", bridge)
		}
		return n, n.setup()
	}
	for i := 0; i < 256; i++ {
		cidr := fmt.Sprintf("10.213.%d.0/24", i)
		n, err := tryNetwork(fmt.Sprintf("sparklet-br%d", i), cidr)
		if err != nil {
			return nil, err
		}
		if n == nil {
			continue
		}
		n.removeLeftovers()
		if subnetInUse(cidr) {
			n.lock.Close()
			continue
		}
		return n, n.setup()
	}
	return nil, errors.New("no free subnet in 10.213.0.0/16")
}

// tryNetwork locks bridge, or returns nil if another runner holds it.
func tryNetwork(bridge, subnet string) (*network, error) {
	ip, ipnet, err := net.ParseCIDR(subnet)
	if err != nil {
		return nil, err
	}
	if ones, bits := ipnet.Mask.Size(); ones != 24 || bits != 32 || ip.To4() == nil {
		return nil, fmt.Errorf("subnet %s: the runner wants an IPv4 /24", subnet)
	}
	if len(bridge) > 12 {
		return nil, fmt.Errorf("bridge name %q: at most 12 characters, since pod namespaces are named after it", bridge)
	}
	f, err := os.OpenFile(filepath.Join(lockDir, bridge+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, err
	}
	host := ipnet.IP.To4()
	host = net.IPv4(host[0], host[1], host[2], 1).To4()
	return &network{bridge: bridge, subnet: ipnet, hostIP: host, lock: f, used: map[byte]bool{0: true, 1: true, 255: true}}, nil
}

// subnetInUse reports whether an interface of the host has an address in
// cidr (say, a bridge that is not a pod runner's).
func subnetInUse(cidr string) bool {
	_, ipnet, _ := net.ParseCIDR(cidr)
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, _, err := net.ParseCIDR(a.String()); err == nil && ipnet.Contains(ip) {
			return true
		}
	}
	return false
}

// setup removes leftovers of this bridge and creates it.
func (n *network) setup() error {
	n.removeLeftovers()
	ones, _ := n.subnet.Mask.Size()
	for _, args := range [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("%s/%d", n.hostIP, ones), "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			n.close()
			return err
		}
	}
	return nil
}

func (n *network) removeLeftovers() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), n.bridge+"-") {
			_ = ip("netns", "del", e.Name())
		}
	}
	if _, err := net.InterfaceByName(n.bridge); err == nil {
		_ = ip("link", "del", n.bridge)
	}
}

// close deletes the bridge and every pod namespace left, and releases the
// lock.
func (n *network) close() {
	n.removeLeftovers()
	n.lock.Close()
}

// podNet is one pod's network namespace.
type podNet struct {
	name string // under /run/netns
	ip   net.IP
}

func (p *podNet) path() string { return filepath.Join("/run/netns", p.name) }

// addPod creates a network namespace with lo up and eth0, a veth into the
// bridge, holding the next free address.
func (n *network) addPod() (*podNet, error) {
	n.mu.Lock()
	octet := -1
	for i := 2; i < 255; i++ {
		if !n.used[byte(i)] {
			octet = i
			n.used[byte(i)] = true
			break
		}
	}
	n.mu.Unlock()
	if octet < 0 {
		return nil, fmt.Errorf("no free address in %s", n.subnet)
	}
	base := n.subnet.IP.To4()
	p := &podNet{name: fmt.Sprintf("%s-%d", n.bridge, octet), ip: net.IPv4(base[0], base[1], base[2], byte(octet)).To4()}
	host := fmt.Sprintf("veth%04x%d", crc32.ChecksumIEEE([]byte(n.bridge))&0xffff, octet)
	ones, _ := n.subnet.Mask.Size()
	for _, args := range [][]string{
		{"netns", "add", p.name},
		{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", p.name},
		{"link", "set", host, "master", n.bridge, "up"},
		{"-n", p.name, "addr", "add", fmt.Sprintf("%s/%d", p.ip, ones), "dev", "eth0"},
		{"-n", p.name, "link", "set", "eth0", "up"},
		{"-n", p.name, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			n.removePod(p)
			return nil, err
		}
	}
	return p, nil
}

// removePod deletes a pod's namespace (and with it its veth) and frees its
// address.
func (n *network) removePod(p *podNet) {
	_ = ip("netns", "del", p.name)
	n.mu.Lock()
	delete(n.used, p.ip.To4()[3])
	n.mu.Unlock()
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
