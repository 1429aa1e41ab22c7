package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sparklet/sparklet/test/podrunner"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "admin kubeconfig of the control plane")
	node := flag.String("node", "podrunner-1", "name of the node to register")
	dir := flag.String("dir", ".cache/podrunner", "where pods' volumes and container logs go")
	bridge := flag.String("bridge", "", "bridge name (with --subnet); default: the first free sparklet-br<N>")
	subnet := flag.String("subnet", "", "the pods' IPv4 /24; default: 10.213.<N>.0/24")
	hostImages := flag.String("host-images", "", "comma-separated image references whose containers run their command and args with the host's binaries")
	flag.Parse()
	if err := run(*kubeconfig, *node, *dir, *bridge, *subnet, strings.Split(*hostImages, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "podrunner:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node, dir, bridge, subnet string, hostImages []string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	r, err := podrunner.New(podrunner.Options{NodeName: node, Dir: dir, Bridge: bridge, Subnet: subnet,
		Images: hostResolver(hostImages)})
	if err != nil {
		return err
	}
	defer r.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := r.Start(ctx, cfg); err != nil {
		return err
	}
	fmt.Printf("node %s is Ready; pods reach the API server at https://%s:%d (its certificate must name %s)\n",
		node, r.HostIP(), r.APIServerPort(), r.HostIP())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	fmt.Println("stopping: ending the pods' processes")
	return nil
}

// hostResolver maps the listed images to the host itself: a container runs
// its command and args as written.
func hostResolver(images []string) podrunner.ImageResolver {
	return func(image string) (*podrunner.Image, error) {
		if !slices.Contains(images, image) {
			return nil, fmt.Errorf("image %q has no local mapping (see --host-images)", image)
		}
		return &podrunner.Image{Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}, nil
	}
}
