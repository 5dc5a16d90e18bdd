package main

// Process bookkeeping. Every component runs in its own session (Setsid, so its process group id
// is its pid), with stdin from /dev/null and stdout/stderr appended to <dir>/logs/<name>.log.
// The launcher records each pid together with the kernel's start time of that process, so that
// `down` signals exactly the processes `up` started and never a stranger that reused a pid.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is one recorded component process.
type proc struct {
	Name      string   `json:"name"`
	Pid       int      `json:"pid"`
	StartTime string   `json:"startTime"` // field 22 of /proc/<pid>/stat
	Log       string   `json:"log"`
	Args      []string `json:"args"`

	exited chan struct{} // closed when the process exits (only for processes this launcher started)
	err    error
}

// state is what `up` leaves in <dir>/state.json for `down` and for the next `up`.
type state struct {
	Server     string  `json:"server"`
	Kubeconfig string  `json:"kubeconfig"`
	Processes  []*proc `json:"processes"`
}

func readState(dir string) (*state, error) {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, "state.json"), err)
	}
	return &s, nil
}

func writeState(dir string, s *state) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "state.json")); err != nil {
		return err
	}
	// A plain list for humans and shell scripts: "<name> <pid>" per line.
	var b strings.Builder
	for _, p := range s.Processes {
		fmt.Fprintf(&b, "%s %d\n", p.Name, p.Pid)
	}
	return os.WriteFile(filepath.Join(dir, "pids"), []byte(b.String()), 0o600)
}

// procStat returns the state letter and the start time of pid, or ok=false if there is no such
// process.
func procStat(pid int) (stateLetter, startTime string, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", "", false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", "", false
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 {
		return "", "", false
	}
	return fields[0], fields[19], true
}

// alive reports whether the recorded process still runs (a zombie counts as gone).
func (p *proc) alive() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
		}
	}
	st, start, ok := procStat(p.Pid)
	return ok && st != "Z" && start == p.StartTime
}

// start launches a component in its own session with its output in logPath.
func start(name, binary string, args []string, logPath string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "# %s %s\n", binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{Name: name, Pid: cmd.Process.Pid, Log: logPath, Args: append([]string{binary}, args...),
		exited: make(chan struct{})}
	if _, startTime, ok := procStat(p.Pid); ok {
		p.StartTime = startTime
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stopAll stops recorded processes in reverse start order: SIGTERM to the process group, a grace
// period, then SIGKILL. Processes that are already gone (or whose pid now belongs to another
// process) are skipped.
func stopAll(procs []*proc, grace time.Duration) {
	// Stop the clients of the apiserver first, then the apiserver, then etcd.
	var waves [][]*proc
	var clients, rest []*proc
	for _, p := range procs {
		if p.Name == "etcd" || p.Name == "kube-apiserver" {
			rest = append(rest, p)
		} else {
			clients = append(clients, p)
		}
	}
	waves = append(waves, clients)
	for i := len(rest) - 1; i >= 0; i-- {
		waves = append(waves, []*proc{rest[i]})
	}
	for _, wave := range waves {
		var signalled []*proc
		for _, p := range wave {
			if p.alive() {
				if err := syscall.Kill(-p.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
					_ = syscall.Kill(p.Pid, syscall.SIGTERM)
				}
				signalled = append(signalled, p)
			}
		}
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) && anyAlive(signalled) {
			time.Sleep(100 * time.Millisecond)
		}
		for _, p := range signalled {
			if p.alive() {
				fmt.Fprintf(os.Stderr, "%s (pid %d) ignored SIGTERM for %s; killing it\n", p.Name, p.Pid, grace)
				_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
				_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			}
		}
		for time.Now().Before(deadline.Add(5*time.Second)) && anyAlive(signalled) {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func anyAlive(procs []*proc) bool {
	for _, p := range procs {
		if p.alive() {
			return true
		}
	}
	return false
}

// logTail returns the last n lines of a log file, for error messages.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
