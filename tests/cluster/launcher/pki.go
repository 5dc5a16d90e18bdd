package main

// Certificates for the local control plane, made the way envtest makes them: ECDSA P-256 keys
// written as PKCS#8 PEM (rustls and kube-rs read those; SEC1 "EC PRIVATE KEY" has bitten them
// before), one CA for serving, one CA for client certificates, and a separate service-account
// signing key.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its private key, both PEM encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// pkiFiles are the paths of every file the components read.
type pkiFiles struct {
	dir            string
	servingCA      string // ca.crt: verifies the apiserver's serving certificate
	servingCAKey   string
	servingCert    string // apiserver.crt, SANs localhost, 127.0.0.1 and the kubernetes service names
	servingKey     string
	clientCA       string // client-ca.crt: the apiserver trusts client certificates it signed
	clientCAKey    string
	adminCert      string // admin.crt: CN=admin, O=system:masters
	adminKey       string
	saKey          string // sa.key: signs service-account tokens
	saPub          string // sa.pub: verifies them
	frontProxyCA   string // front-proxy-ca.crt: the request-header CA (aggregation layer)
	proxyCert      string // front-proxy-client.crt: the apiserver's client cert towards aggregated APIs
	proxyKey       string
	servingCAPEM   []byte
	adminCertPEM   []byte
	adminKeyPEM    []byte
	clientCAKeyPEM []byte
}

func newPKIFiles(dir string) pkiFiles {
	p := func(name string) string { return filepath.Join(dir, name) }
	return pkiFiles{
		dir:          dir,
		servingCA:    p("ca.crt"),
		servingCAKey: p("ca.key"),
		servingCert:  p("apiserver.crt"),
		servingKey:   p("apiserver.key"),
		clientCA:     p("client-ca.crt"),
		clientCAKey:  p("client-ca.key"),
		adminCert:    p("admin.crt"),
		adminKey:     p("admin.key"),
		saKey:        p("sa.key"),
		saPub:        p("sa.pub"),
		frontProxyCA: p("front-proxy-ca.crt"),
		proxyCert:    p("front-proxy-client.crt"),
		proxyKey:     p("front-proxy-client.key"),
	}
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a P-256 key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding a key as PKCS#8: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
}

// issue signs tmpl with parent (or self-signs when parent is nil).
func issue(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = sn
	now := time.Now()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(365 * 24 * time.Hour)
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  keyPEM,
	}, nil
}

func newCA(name string) (*keyPair, error) {
	return issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}, nil)
}

// generatePKI writes every certificate and key the control plane needs into p.dir.
func generatePKI(p *pkiFiles) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	servingCA, err := newCA("olmrs-cluster-ca")
	if err != nil {
		return err
	}
	serving, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)},
	}, servingCA)
	if err != nil {
		return err
	}
	clientCA, err := newCA("olmrs-client-ca")
	if err != nil {
		return err
	}
	admin, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, clientCA)
	if err != nil {
		return err
	}
	// The request-header (front-proxy) CA completes kube-system/extension-apiserver-authentication;
	// without it every component that delegates authentication logs errors about it.
	frontProxyCA, err := newCA("olmrs-front-proxy-ca")
	if err != nil {
		return err
	}
	proxyClient, err := issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "front-proxy-client"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, frontProxyCA)
	if err != nil {
		return err
	}
	saKey, saKeyPEM, err := newKey()
	if err != nil {
		return err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	files := []struct {
		path string
		data []byte
	}{
		{p.servingCA, servingCA.certPEM},
		{p.servingCAKey, servingCA.keyPEM},
		{p.servingCert, serving.certPEM},
		{p.servingKey, serving.keyPEM},
		{p.clientCA, clientCA.certPEM},
		{p.clientCAKey, clientCA.keyPEM},
		{p.adminCert, admin.certPEM},
		{p.adminKey, admin.keyPEM},
		{p.frontProxyCA, frontProxyCA.certPEM},
		{p.proxyCert, proxyClient.certPEM},
		{p.proxyKey, proxyClient.keyPEM},
		{p.saKey, saKeyPEM},
		{p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return err
		}
	}
	p.servingCAPEM = servingCA.certPEM
	p.adminCertPEM = admin.certPEM
	p.adminKeyPEM = admin.keyPEM
	return nil
}

// loadPKI reads back the PEM files a running cluster's clients need.
func loadPKI(p *pkiFiles) error {
	var err error
	if p.servingCAPEM, err = os.ReadFile(p.servingCA); err != nil {
		return err
	}
	if p.adminCertPEM, err = os.ReadFile(p.adminCert); err != nil {
		return err
	}
	p.adminKeyPEM, err = os.ReadFile(p.adminKey)
	return err
}

// writeKubeconfig writes an admin kubeconfig with the certificates inlined, so the file alone
// is enough to reach the cluster.
func writeKubeconfig(path, server string, p *pkiFiles) error {
	b64 := base64.StdEncoding.EncodeToString
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: olmrs
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: olmrs-admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: olmrs
  context:
    cluster: olmrs
    user: olmrs-admin
    namespace: default
current-context: olmrs
`, server, b64(p.servingCAPEM), b64(p.adminCertPEM), b64(p.adminKeyPEM))
	return os.WriteFile(path, []byte(text), 0o600)
}
