// Command kube-apiserver runs a real Kubernetes API server (k8s.io/kubernetes/cmd/kube-apiserver)
// together with an embedded etcd in one process, for tests. It is not for production: etcd runs with
// fsync disabled and a throwaway data directory.
//
// Our own flags start with --embedded-etcd- and are taken off the command line; everything else is
// handed to the kube-apiserver command unchanged:
//
//	--embedded-etcd-dir=DIR          etcd data directory (default: a fresh temporary directory, removed on exit)
//	--embedded-etcd-client-url=URL   where etcd serves clients (default: http://127.0.0.1:<free port>)
//	--embedded-etcd-peer-url=URL     etcd's peer listener (default: http://127.0.0.1:<free port>)
//
// When --etcd-servers is not given, it is set to the embedded etcd's client URL.
package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
	_ "time/tzdata" // for timeZone support in CronJob, as in upstream's main

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

const prefix = "--embedded-etcd-"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	own, rest, err := splitArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver:", err)
		return 2
	}
	dir := own["dir"]
	if dir == "" {
		tmp, err := os.MkdirTemp("", "gw-etcd-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "kube-apiserver:", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	clientURL, err := urlOrFree(own["client-url"])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver: --embedded-etcd-client-url:", err)
		return 2
	}
	peerURL, err := urlOrFree(own["peer-url"])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver: --embedded-etcd-peer-url:", err)
		return 2
	}

	etcd, err := startEtcd(dir, clientURL, peerURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver: embedded etcd:", err)
		return 1
	}
	defer etcd.Close()

	if !hasFlag(rest, "--etcd-servers") {
		rest = append([]string{"--etcd-servers=" + clientURL.String()}, rest...)
	}
	command := app.NewAPIServerCommand()
	command.SetArgs(rest)
	return cli.Run(command)
}

// splitArgs takes our --embedded-etcd-NAME=VALUE (or --embedded-etcd-NAME VALUE) flags off args.
func splitArgs(args []string) (map[string]string, []string, error) {
	own := map[string]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, prefix) {
			rest = append(rest, a)
			continue
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(a, prefix), "=")
		if !ok {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("%s%s needs a value", prefix, name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "dir", "client-url", "peer-url":
			own[name] = value
		default:
			return nil, nil, fmt.Errorf("unknown flag %s%s", prefix, name)
		}
	}
	return own, rest, nil
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

func urlOrFree(s string) (*url.URL, error) {
	if s != "" {
		return url.Parse(s)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	return &url.URL{Scheme: "http", Host: addr}, nil
}

func startEtcd(dir string, clientURL, peerURL *url.URL) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "gw-test"
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true // throwaway test data
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("not ready after 60s")
	}
}
