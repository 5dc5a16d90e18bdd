package main

// `restart COMPONENT`: stop one component of a running cluster and start it again with exactly
// the arguments recorded in state.json (same ports, same data, same certificates), then wait
// until it is healthy again. The fault suite uses it to restart kube-apiserver mid-install.
//
// The rule this file enforces: only the recorded process is signalled (pid and kernel start
// time must both match), and the restarted process is recorded in its place before anything
// waits on it, so `down` can always stop what runs.

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// restartable lists the components `restart` accepts, in start order.
var restartable = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

func restart(dir, component string, grace time.Duration) error {
	known := false
	for _, name := range restartable {
		known = known || name == component
	}
	if !known {
		return fmt.Errorf("cannot restart %q: the components are %s", component, strings.Join(restartable, ", "))
	}
	s, err := readState(dir)
	if err != nil {
		return fmt.Errorf("no cluster in %s to restart %s in: %w", dir, component, err)
	}
	// The other components must run; the one restarted may already be dead (a crash).
	idx := -1
	for i, p := range s.Processes {
		if p.Name == component {
			idx = i
		} else if !p.alive() {
			return fmt.Errorf("%s (pid %d) is not running, so the cluster in %s is broken: "+
				"run tests/cluster/down and tests/cluster/up (its log is %s)", p.Name, p.Pid, dir, p.Log)
		}
	}
	if idx < 0 {
		return fmt.Errorf("%s is not recorded in %s", component, filepath.Join(dir, "state.json"))
	}
	old := s.Processes[idx]
	if len(old.Args) == 0 {
		return fmt.Errorf("%s has no recorded command line in %s (a cluster started by an older launcher): "+
			"run tests/cluster/down and tests/cluster/up", component, filepath.Join(dir, "state.json"))
	}
	began := time.Now()
	stopAll([]*proc{old}, grace)
	// A killed multi-threaded process shows as a zombie while its other threads still hold its
	// sockets: wait until it is reaped and its ports can be bound again.
	if err := waitUntil(old.Name+" to be gone and its ports free", nil, 30*time.Second, func() error {
		if _, start, ok := procStat(old.Pid); ok && start == old.StartTime {
			return fmt.Errorf("pid %d is still in the process table", old.Pid)
		}
		return portsFree(old.Args[1:])
	}); err != nil {
		return err
	}
	stopped := time.Since(began)

	p, err := start(old.Name, old.Args[0], old.Args[1:], old.Log)
	if err != nil {
		return err
	}
	s.Processes[idx] = p
	if err := writeState(dir, s); err != nil {
		return err
	}
	restarted := time.Now()
	if err := waitHealthy(dir, s, p); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s restarted (pid %d): stopped in %.1fs, healthy %.1fs after its start\n",
		component, p.Pid, stopped.Seconds(), time.Since(restarted).Seconds())
	return nil
}

// portsFree checks that every loopback port named by the flags (`--secure-port=N`,
// `--listen-client-urls=http://127.0.0.1:N`, `--listen-peer-urls=...`) can be bound.
func portsFree(args []string) error {
	var addrs []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			addrs = append(addrs, "127.0.0.1:"+v)
		}
		for _, f := range []string{"--listen-client-urls=", "--listen-peer-urls="} {
			if v, ok := strings.CutPrefix(a, f); ok {
				for _, u := range strings.Split(v, ",") {
					addrs = append(addrs, strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"))
				}
			}
		}
	}
	for _, addr := range addrs {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s is still bound: %w", addr, err)
		}
		l.Close()
	}
	return nil
}

// waitHealthy waits on the health endpoint of a restarted component, found from its recorded
// flags (kwok has none: it counts as healthy while it runs, after one second).
func waitHealthy(dir string, s *state, p *proc) error {
	flag := func(name string) string {
		for _, a := range p.Args[1:] {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		return ""
	}
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
	}}
	switch p.Name {
	case "etcd":
		url := strings.Split(flag("listen-client-urls"), ",")[0]
		plain := &http.Client{Timeout: 2 * time.Second}
		return waitUntil("etcd /health", p, 30*time.Second, func() error { return httpOK(plain, url+"/health") })
	case "kube-apiserver":
		pki := newPKIFiles(filepath.Join(dir, "pki"))
		if err := loadPKI(&pki); err != nil {
			return err
		}
		api, err := newAPI(s.Server, &pki)
		if err != nil {
			return err
		}
		return waitUntil("kube-apiserver /readyz", p, 120*time.Second, api.ready)
	case "kube-controller-manager", "kube-scheduler":
		url := fmt.Sprintf("https://127.0.0.1:%s/healthz", flag("secure-port"))
		return waitUntil(p.Name+" /healthz", p, 60*time.Second, func() error { return httpOK(insecure, url) })
	default:
		time.Sleep(time.Second)
		if !p.alive() {
			return fmt.Errorf("%s exited right after its restart; last lines of %s:\n%s", p.Name, p.Log, logTail(p.Log, 30))
		}
		return nil
	}
}
