// Command olmrs-cluster starts and stops the local Kubernetes control plane that olm-rs tests
// and the demo run against: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
// (standing in for kubelets), each its own process on free loopback ports, all data under one
// directory.
//
//	olmrs-cluster up     [--dir D] [--bin B] [--nodes N]   start (or reuse) a cluster, print the kubeconfig path
//	olmrs-cluster down   [--dir D]                         stop exactly the recorded processes, remove D
//	olmrs-cluster status [--dir D]                         exit 0 and print the kubeconfig path if healthy
//	olmrs-cluster restart COMPONENT [--dir D] [--grace T]  stop one component, start it again with the same flags, wait until healthy
//
// `up` exits once the cluster is ready and leaves it running; the processes are detached into
// their own sessions and recorded in D/state.json (and D/pids), their logs in D/logs.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
	podCIDR     = "10.244.0.0/16"
)

func usage() {
	fmt.Fprintln(os.Stderr, `usage: olmrs-cluster up|down|status [--dir DIR] [--bin BINDIR] [--nodes N]
       olmrs-cluster restart COMPONENT [--dir DIR] [--grace DURATION]

  up      start the control plane (or reuse the healthy one in DIR) and print the kubeconfig path
  down    stop the processes recorded in DIR and remove DIR
  status  print the kubeconfig path if the cluster in DIR is healthy, else exit 1
  restart stop COMPONENT (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)
          with SIGTERM, DURATION of grace (default 10s; 0s is a crash), then SIGKILL; start it
          again with its recorded flags and ports and wait until it is healthy

DIR defaults to $OLMRS_CLUSTER_DIR; BINDIR to the directory holding this program.`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd := os.Args[1]
	args := os.Args[2:]
	component := ""
	if cmd == "restart" {
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			usage()
			os.Exit(2)
		}
		component, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	dir := fs.String("dir", os.Getenv("OLMRS_CLUSTER_DIR"), "data directory of the cluster")
	bin := fs.String("bin", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok")
	nodes := fs.Int("nodes", 2, "number of fake nodes to create")
	grace := fs.Duration("grace", 10*time.Second, "restart: how long a stopped component may take to exit before SIGKILL")
	_ = fs.Parse(args)
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "olmrs-cluster: no data directory: pass --dir or set OLMRS_CLUSTER_DIR")
		os.Exit(2)
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		fail(err)
	}
	if *bin == "" {
		exe, err := os.Executable()
		if err != nil {
			fail(err)
		}
		*bin = filepath.Dir(exe)
	}

	unlock, err := lock(absDir)
	if err != nil {
		fail(err)
	}
	defer unlock()

	switch cmd {
	case "up":
		err = up(absDir, *bin, *nodes)
	case "down":
		err = down(absDir)
	case "status":
		err = status(absDir)
	case "restart":
		err = restart(absDir, component, *grace)
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		unlock()
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "olmrs-cluster: %v\n", err)
	os.Exit(1)
}

// lock serialises launchers working on the same directory (two `up`s at once would otherwise
// start two clusters). The lock file sits next to the directory because `down` removes it.
func lock(dir string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s.lock: %w", dir, err)
	}
	done := false
	return func() {
		if !done {
			done = true
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
	}, nil
}

// healthy reports whether the cluster recorded in dir runs: every recorded process is alive and
// the apiserver answers /readyz.
func healthy(dir string) (*state, error) {
	s, err := readState(dir)
	if err != nil {
		return nil, err
	}
	for _, p := range s.Processes {
		if !p.alive() {
			return s, fmt.Errorf("%s (pid %d) is not running; its log is %s", p.Name, p.Pid, p.Log)
		}
	}
	pki := newPKIFiles(filepath.Join(dir, "pki"))
	if err := loadPKI(&pki); err != nil {
		return s, err
	}
	api, err := newAPI(s.Server, &pki)
	if err != nil {
		return s, err
	}
	if err := api.ready(); err != nil {
		return s, err
	}
	return s, nil
}

func status(dir string) error {
	s, err := healthy(dir)
	if err != nil {
		return fmt.Errorf("no healthy cluster in %s: %w", dir, err)
	}
	fmt.Println(s.Kubeconfig)
	return nil
}

func down(dir string) error {
	s, err := readState(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, statErr := os.Stat(dir); errors.Is(statErr, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "no cluster in %s\n", dir)
			return nil
		}
	case err != nil:
		return err
	default:
		stopAll(s.Processes, 10*time.Second)
		for _, p := range s.Processes {
			if p.alive() {
				return fmt.Errorf("%s (pid %d) is still running after SIGKILL; %s kept", p.Name, p.Pid, dir)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cluster in %s stopped and removed\n", dir)
	return nil
}

func up(dir, bin string, nodes int) error {
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		s, err := healthy(dir)
		if err == nil {
			fmt.Fprintf(os.Stderr, "reusing the running cluster in %s\n", dir)
			fmt.Println(s.Kubeconfig)
			return nil
		}
		fmt.Fprintf(os.Stderr, "the cluster in %s is not healthy (%v); replacing it\n", dir, err)
		if err := down(dir); err != nil {
			return err
		}
	} else if _, err := os.Stat(dir); err == nil {
		// Left over by a failed `up` (its processes were stopped) or by hand: start clean.
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return fmt.Errorf("%s not found in %s: run tests/cluster/build first", name, bin)
		}
	}
	began := time.Now()
	c := &cluster{dir: dir, bin: bin, nodes: nodes}
	// Interrupted half-way: stop what was started (the processes run in their own sessions, so
	// they do not see the terminal's signal).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "olmrs-cluster: %v during up; stopping the started components\n", sig)
		stopAll(c.procs, 5*time.Second)
		_ = os.Remove(filepath.Join(dir, "state.json"))
		os.Exit(130)
	}()
	err := c.start()
	if err != nil {
		stopAll(c.procs, 5*time.Second)
		// Keep the logs for the post-mortem; drop the state so the next `up` starts clean.
		_ = os.Remove(filepath.Join(dir, "state.json"))
		return fmt.Errorf("%w\n(logs are in %s; the next `up` removes them)", err, filepath.Join(dir, "logs"))
	}
	fmt.Fprintf(os.Stderr, "cluster ready in %.1fs: %d nodes, logs in %s\n",
		time.Since(began).Seconds(), nodes, filepath.Join(dir, "logs"))
	fmt.Println(c.kubeconfig)
	return nil
}
