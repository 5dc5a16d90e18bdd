package main

// Starting the components in order, each gated on its health endpoint, then the fake nodes.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type cluster struct {
	dir, bin   string
	nodes      int
	procs      []*proc
	server     string
	kubeconfig string
}

// freePorts binds n loopback ports at once (so they are distinct), then releases them for the
// components to take, as envtest does.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (c *cluster) run(name string, args ...string) (*proc, error) {
	p, err := start(name, filepath.Join(c.bin, name), args, filepath.Join(c.dir, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	// Record each process as soon as it runs, so that `down` can stop a half-started cluster.
	return p, c.saveState()
}

func (c *cluster) saveState() error {
	return writeState(c.dir, &state{Server: c.server, Kubeconfig: c.kubeconfig, Processes: c.procs})
}

// waitUntil polls check until it returns nil, the deadline passes, or p exits.
func waitUntil(what string, p *proc, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	last := errors.New("not checked yet")
	for {
		if p != nil && !p.alive() {
			return fmt.Errorf("%s exited while waiting for %s (%v); last lines of %s:\n%s",
				p.Name, what, p.err, p.Log, logTail(p.Log, 30))
		}
		if last = check(); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("timed out after %s waiting for %s: %v", timeout, what, last)
			if p != nil {
				msg += fmt.Sprintf("; last lines of %s:\n%s", p.Log, logTail(p.Log, 30))
			}
			return errors.New(msg)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func httpOK(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func (c *cluster) start() error {
	for _, d := range []string{"logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(c.dir, d), 0o700); err != nil {
			return err
		}
	}
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	pki := newPKIFiles(filepath.Join(c.dir, "pki"))
	if err := generatePKI(&pki); err != nil {
		return err
	}
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	server := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	c.server = server
	if err := writeKubeconfig(c.kubeconfig, server, &pki); err != nil {
		return err
	}
	kwokConfig := filepath.Join(c.dir, "kwok.yaml")
	if err := writeKwokConfig(kwokConfig, filepath.Join(c.bin, "kwok-stages")); err != nil {
		return err
	}

	// etcd
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcd, err := c.run("etcd",
		"--name=olmrs",
		"--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=olmrs="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	if err := waitUntil("etcd /health", etcd, 30*time.Second, func() error {
		return httpOK(plain, etcdURL+"/health")
	}); err != nil {
		return err
	}

	// kube-apiserver
	apiserver, err := c.run("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(c.dir, "pki", "apiserver"),
		"--tls-cert-file="+pki.servingCert,
		"--tls-private-key-file="+pki.servingKey,
		"--client-ca-file="+pki.clientCA,
		"--authorization-mode=Node,RBAC",
		"--requestheader-client-ca-file="+pki.frontProxyCA,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+pki.proxyCert,
		"--proxy-client-key-file="+pki.proxyKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki.saPub,
		"--service-account-signing-key-file="+pki.saKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--endpoint-reconciler-type=none",
		// Webhooks and APIServices that name a Service are called on an endpoint's pod IP, not the
		// ClusterIP (nothing routes ClusterIPs here: no kube-proxy). See README "Pod network".
		"--enable-aggregator-routing=true",
		"--allow-privileged=true",
		"--profiling=false",
		// No QPS limits: the tests hammer one apiserver from several controllers at once.
		"--max-requests-inflight=0",
		"--max-mutating-requests-inflight=0",
		"--enable-priority-and-fairness=false",
	)
	if err != nil {
		return err
	}
	api, err := newAPI(server, &pki)
	if err != nil {
		return err
	}
	if err := waitUntil("kube-apiserver /readyz", apiserver, 120*time.Second, api.ready); err != nil {
		return err
	}

	// kube-controller-manager, kube-scheduler, kwok
	kcm, err := c.run("kube-controller-manager",
		"--kubeconfig="+c.kubeconfig,
		"--authentication-kubeconfig="+c.kubeconfig,
		"--authorization-kubeconfig="+c.kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", kcmPort),
		"--cert-dir="+filepath.Join(c.dir, "pki", "kube-controller-manager"),
		"--controllers=*",
		"--cluster-name=olmrs",
		"--service-account-private-key-file="+pki.saKey,
		"--root-ca-file="+pki.servingCA,
		"--cluster-signing-cert-file="+pki.clientCA,
		"--cluster-signing-key-file="+pki.clientCAKey,
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	sched, err := c.run("kube-scheduler",
		"--kubeconfig="+c.kubeconfig,
		"--authentication-kubeconfig="+c.kubeconfig,
		"--authorization-kubeconfig="+c.kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", schedPort),
		"--cert-dir="+filepath.Join(c.dir, "pki", "kube-scheduler"),
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	kwok, err := c.run("kwok",
		"--kubeconfig="+c.kubeconfig,
		"--config="+kwokConfig,
		"--manage-all-nodes=true",
		"--node-lease-duration-seconds=40",
		"--cidr="+podCIDR,
	)
	if err != nil {
		return err
	}
	// The controllers serve /healthz with self-signed certificates; only liveness matters here.
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
	}}
	if err := waitUntil("kube-controller-manager /healthz", kcm, 60*time.Second, func() error {
		return httpOK(insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort))
	}); err != nil {
		return err
	}
	if err := waitUntil("kube-scheduler /healthz", sched, 60*time.Second, func() error {
		return httpOK(insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", schedPort))
	}); err != nil {
		return err
	}

	// Fake nodes, Ready and untainted (proves kwok and the node-lifecycle controller work).
	names := make([]string, 0, c.nodes)
	for i := 1; i <= c.nodes; i++ {
		name := fmt.Sprintf("olmrs-node-%d", i)
		names = append(names, name)
		if err := api.createNode(name, fmt.Sprintf("172.30.0.%d", i)); err != nil {
			return err
		}
	}
	if err := waitUntil("nodes Ready and untainted", kwok, 120*time.Second, func() error {
		return api.nodesReady(names)
	}); err != nil {
		return err
	}
	// default/default ServiceAccount (proves the serviceaccount controller works; pods need it).
	if err := waitUntil("the default/default ServiceAccount", kcm, 60*time.Second, func() error {
		return api.get("/api/v1/namespaces/default/serviceaccounts/default", nil)
	}); err != nil {
		return err
	}
	for _, p := range c.procs {
		if !p.alive() {
			return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.Name, p.err, p.Log, logTail(p.Log, 30))
		}
	}
	return nil
}

// writeKwokConfig writes kwok's --config: the node and pod Stage objects of kwok's "fast"
// lifecycle (node-initialize, node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete).
// The build copies them from the kwok module at the pinned version into <bin>/kwok-stages.
// Since kwok v0.8.0, kwok runs no stage unless it is given one.
func writeKwokConfig(path, stagesDir string) error {
	files, err := filepath.Glob(filepath.Join(stagesDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no kwok stages in %s: run tests/cluster/build", stagesDir)
	}
	sort.Strings(files)
	var b bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "---\n# from %s\n", filepath.Base(f))
		b.Write(bytes.TrimSpace(data))
		b.WriteString("\n")
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}

// api is a tiny admin client for the apiserver (stdlib only, so the launcher builds in seconds).
type api struct {
	server string
	client *http.Client
}

func newAPI(server string, p *pkiFiles) (*api, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.servingCAPEM) {
		return nil, errors.New("the serving CA is not valid PEM")
	}
	cert, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the admin certificate: %w", err)
	}
	return &api{server: server, client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
	}}}, nil
}

func (a *api) ready() error { return httpOK(a.client, a.server+"/readyz") }

func (a *api) do(method, path string, body any, out any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, a.server+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &apiError{status: resp.StatusCode, msg: fmt.Sprintf("%s %s: %d: %s", method, path, resp.StatusCode,
			strings.TrimSpace(string(data)))}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func (a *api) get(path string, out any) error { return a.do(http.MethodGet, path, nil, out) }

// createNode registers a fake node the way a kubelet would: with its status (capacity,
// allocatable, addresses) filled in; kwok's node-initialize stage keeps these and adds the rest.
func (a *api) createNode(name, ip string) error {
	resources := map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}
	node := map[string]any{
		"apiVersion": "v1",
		"kind":       "Node",
		"metadata": map[string]any{
			"name": name,
			"labels": map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
			"annotations": map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		"status": map[string]any{
			"allocatable": resources,
			"capacity":    resources,
			"addresses": []map[string]string{
				{"type": "InternalIP", "address": ip},
				{"type": "Hostname", "address": name},
			},
		},
	}
	err := a.do(http.MethodPost, "/api/v1/nodes", node, nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusConflict {
		return nil
	}
	return err
}

func (a *api) nodesReady(names []string) error {
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Taints []struct {
					Key string `json:"key"`
				} `json:"taints"`
			} `json:"spec"`
			Status struct {
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := a.get("/api/v1/nodes", &list); err != nil {
		return err
	}
	ok := map[string]bool{}
	var notes []string
	for _, n := range list.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" {
				ready = true
			}
		}
		switch {
		case !ready:
			notes = append(notes, n.Metadata.Name+" not Ready")
		case len(n.Spec.Taints) > 0:
			notes = append(notes, fmt.Sprintf("%s still tainted with %s", n.Metadata.Name, n.Spec.Taints[0].Key))
		default:
			ok[n.Metadata.Name] = true
		}
	}
	for _, name := range names {
		if !ok[name] {
			if len(notes) == 0 {
				notes = append(notes, name+" missing")
			}
			return errors.New(strings.Join(notes, "; "))
		}
	}
	return nil
}
