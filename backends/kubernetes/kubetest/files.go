package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The files StartServer writes into the server's directory.
const (
	caFile         = "ca.crt"     // the CA that signed serverCertFile
	serverCertFile = "server.crt" // the apiserver's serving certificate
	serverKeyFile  = "server.key" // and its key
	saKeyFile      = "sa.key"     // signs and checks service-account tokens
	tokenFile      = "tokens.csv" // --token-auth-file: the one bearer token
	kubeconfigFile = "kubeconfig" // for kubectl and client-go
	etcdDir        = "etcd"       // the embedded etcd's data
)

// files writes what the apiserver and its clients need into dir: a CA and
// a serving certificate for 127.0.0.1 and localhost, the service-account
// key the apiserver requires, the token file and a kubeconfig. It returns
// the bearer token.
func files(dir, url string) (string, error) {
	caCert, caKey, err := writeCA(dir)
	if err != nil {
		return "", err
	}
	if err := writeServerCert(dir, caCert, caKey); err != nil {
		return "", err
	}
	if _, err := writeKey(filepath.Join(dir, saKeyFile)); err != nil {
		return "", err
	}
	token, err := randomToken()
	if err != nil {
		return "", err
	}
	// token,user,uid,"groups": system:masters, for any authorizer but the
	// AlwaysAllow this server runs with.
	line := token + "," + User + "," + User + ",\"system:masters\"\n"
	if err := os.WriteFile(filepath.Join(dir, tokenFile), []byte(line), 0o600); err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	if err := writeKubeconfig(dir, url, token, caCert); err != nil {
		return "", err
	}
	return token, nil
}

// writeCA writes a self-signed CA certificate and returns it and its key.
func writeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("kubetest: CA key: %w", err)
	}
	tmpl := template("hustings-kubetest-ca")
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("kubetest: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("kubetest: CA certificate: %w", err)
	}
	return cert, key, writePEM(filepath.Join(dir, caFile), "CERTIFICATE", der)
}

// writeServerCert writes the apiserver's serving certificate and key,
// signed by the CA.
func writeServerCert(dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := writeKey(filepath.Join(dir, serverKeyFile))
	if err != nil {
		return err
	}
	tmpl := template("kube-apiserver")
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	tmpl.DNSNames = []string{"localhost"}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("kubetest: serving certificate: %w", err)
	}
	return writePEM(filepath.Join(dir, serverCertFile), "CERTIFICATE", der)
}

// template returns a certificate template named cn, valid for a day
// from an hour ago (a test server lives minutes).
func template(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
}

// writeKey makes a P-256 key and writes it to path as SEC 1 PEM ("EC
// PRIVATE KEY"): the apiserver reads public keys out of private-key files
// in that form only, not PKCS #8.
func writeKey(path string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kubetest: key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("kubetest: key: %w", err)
	}
	return key, writePEM(path, "EC PRIVATE KEY", der)
}

func writePEM(path, kind string, der []byte) error {
	b := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}

// randomToken returns 32 random hex digits.
func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("kubetest: token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeKubeconfig writes a kubeconfig with one cluster, user and context,
// all named "kubetest", the CA inline. JSON is YAML, so no YAML library.
func writeKubeconfig(dir, url, token string, ca *x509.Certificate) error {
	caData := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	text := fmt.Sprintf(`{
  "apiVersion": "v1",
  "kind": "Config",
  "clusters": [{"name": "kubetest", "cluster": {"server": %q, "certificate-authority-data": %q}}],
  "users": [{"name": "kubetest", "user": {"token": %q}}],
  "contexts": [{"name": "kubetest", "context": {"cluster": "kubetest", "user": "kubetest"}}],
  "current-context": "kubetest"
}
`, url, caData, token)
	if err := os.WriteFile(filepath.Join(dir, kubeconfigFile), []byte(text), 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}
