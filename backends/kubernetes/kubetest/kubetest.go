// Package kubetest runs a real kube-apiserver for the tests and benchmarks
// of the Kubernetes backend: a process on a free loopback port, backed by
// an etcd embedded in the test process (etcdtest), stopped by PID, its
// files in a temporary directory that Stop removes. For tests and
// benchmarks only.
//
// The binary is kube-apiserver at Version, built from the Go module proxy
// by the repository's tools/kube-apiserver module, once per machine:
// `make kube-apiserver` (which `make test` runs first) or
// tools/kube-apiserver/build.sh; cold, measured on the 2-core machine
// beside other work, 8 minutes (7.3 CPU-minutes) and 2.4 GB of RAM.
// Binary says where it is looked for. When it is missing, Start fails
// the test, saying how to build it: the tests are never skipped.
//
// The server serves HTTPS on 127.0.0.1 with a certificate of its own CA
// (CAFile), authenticates one bearer token (Token, a static token file)
// and authorizes everything (AlwaysAllow). It runs the default admission
// plugins: those that see Leases (NamespaceLifecycle, the webhook and
// policy plugins with nothing configured, ResourceQuota) are what a real
// cluster runs; the others look only at other kinds. Namespaces must be
// created before use, as on a real cluster. Its etcd (a cluster of one,
// etcd v3.7) runs in the calling process, race-detected under -race.
//
// Start is for tests (it stops the server when the test ends); StartServer
// and Stop are for code without a testing.TB, such as benchmarks in
// another module; Main is the TestMain of a package whose tests share one
// server. RESTConfig is a client-go configuration for the server. Kill
// and Restart crash and restart the apiserver on the same port, files
// and etcd, for fault-injection tests; Etcd reaches its storage. A Server
// is safe for concurrent use.
package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/internal/testserver"
)

// Version is the kube-apiserver version the tests run; the tools module
// (tools/kube-apiserver/go.mod) requires the same.
const Version = "v1.37.2"

// User is the user name the bearer token authenticates as, in the group
// system:masters.
const User = "kubetest"

// BinaryEnv names the environment variable that, when set, is the path of
// the kube-apiserver binary, in place of the per-machine cache.
const BinaryEnv = "HUSTINGS_KUBE_APISERVER"

// readyTimeout bounds how long a start waits for /readyz: about 3 s on an
// idle machine, many times that beside burners with a race-detected etcd.
const readyTimeout = 90 * time.Second

// Server is one kube-apiserver process and the etcd it stores in.
type Server struct {
	dir    string
	port   int
	token  string
	client *http.Client // trusts the CA, sends the token

	etcd *etcdtest.Server
	srv  *testserver.Server
}

// Binary returns the path of the kube-apiserver binary: $HUSTINGS_KUBE_APISERVER
// if set, otherwise <user cache dir>/hustings/kube-apiserver-<Version>/kube-apiserver,
// where <user cache dir> is os.UserCacheDir ($XDG_CACHE_HOME, or
// $HOME/.cache, on Linux), as tools/kube-apiserver/build.sh writes it. It
// returns an error saying how to build the binary if there is none.
func Binary() (string, error) {
	path := os.Getenv(BinaryEnv)
	if path == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("kubetest: %w", err)
		}
		path = filepath.Join(cache, "hustings", "kube-apiserver-"+Version, "kube-apiserver")
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("kubetest: kube-apiserver %s is not built (%w); build it once per machine "+
			"with `make kube-apiserver` from the repository root (tools/kube-apiserver/build.sh, a few minutes)", Version, err)
	}
	return path, nil
}

// Start starts a server for t and stops it when the test ends. It fails
// the test if the server does not start, or if the binary is not built.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer starts an etcd and a kube-apiserver on it in a new temporary
// directory, and waits until the apiserver is ready (/readyz). The caller
// stops it with Stop.
func StartServer() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	s := &Server{dir: dir}
	s.srv = testserver.NewServer(testserver.Spec{Kit: "kubetest", Dir: dir, Bin: bin,
		Args: s.args, Ready: s.ready, ReadyTimeout: readyTimeout, Addr: s.URL, Prepare: s.storage})
	if s.etcd, err = etcdtest.StartServer(filepath.Join(dir, etcdDir)); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for range 3 { // the free port may be taken before the server binds it
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	s.etcd.Stop()
	_ = os.RemoveAll(dir)
	return nil, err
}

// start writes the server's files for a free port, runs the apiserver on
// it and waits until it is ready; s is not yet shared.
func (s *Server) start() error {
	port, err := testserver.FreePort()
	if err != nil {
		return err
	}
	s.port = port
	if s.token, err = files(s.dir, s.URL()); err != nil {
		return err
	}
	if s.client, err = newClient(s.CAFile(), s.token); err != nil {
		return err
	}
	if err := s.srv.Start(); err != nil {
		s.client.CloseIdleConnections()
		return err
	}
	return nil
}

// storage starts the etcd again if it was stopped, before the apiserver
// starts.
func (s *Server) storage() error {
	if s.etcd.Running() {
		return nil
	}
	return s.etcd.Restart()
}

// args are the apiserver's flags.
func (s *Server) args(dir string) []string {
	file := func(name string) string { return filepath.Join(dir, name) }
	return []string{
		"--etcd-servers=http://" + s.etcd.Addr(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(s.port),
		"--cert-dir=" + dir,
		"--tls-cert-file=" + file(serverCertFile),
		"--tls-private-key-file=" + file(serverKeyFile),
		"--token-auth-file=" + file(tokenFile),
		"--anonymous-auth=false",
		"--authorization-mode=AlwaysAllow",
		// Required, although nothing here issues service-account tokens.
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + file(saKeyFile),
		"--service-account-signing-key-file=" + file(saKeyFile),
		"--service-cluster-ip-range=10.0.0.0/24",
		// The default reconciler publishes the advertise address as the
		// kubernetes Service's endpoint, which must not be loopback.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
}

// ready returns nil once GET /readyz answers 200.
func (s *Server) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz: %s", resp.Status)
	}
	return nil
}

// URL returns the server's base URL, https://127.0.0.1:port: a
// rest.Config's Host.
func (s *Server) URL() string { return "https://127.0.0.1:" + strconv.Itoa(s.port) }

// Token returns the bearer token the server accepts: a rest.Config's
// BearerToken.
func (s *Server) Token() string { return s.token }

// CAFile returns the path of the PEM certificate of the CA that signed
// the server's certificate: a rest.Config's TLSClientConfig.CAFile.
func (s *Server) CAFile() string { return filepath.Join(s.dir, caFile) }

// RESTConfig returns a new client-go configuration for the server (URL,
// token and CA), unthrottled: QPS -1, where client-go's default limiter
// (5 requests a second, bursts of 10) would queue a client's keep-alives
// behind its other requests. The caller may change it.
func (s *Server) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            s.URL(),
		BearerToken:     s.Token(),
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAFile()},
		QPS:             -1,
	}
}

// Kubeconfig returns the path of a kubeconfig for the server (URL, CA and
// token; context "kubetest"), for kubectl --kubeconfig or client-go's
// clientcmd.BuildConfigFromFlags("", path).
func (s *Server) Kubeconfig() string { return filepath.Join(s.dir, kubeconfigFile) }

// HTTPClient returns an HTTP client that trusts the server's CA and sends
// its token with every request, for talking to the API without client-go.
// Its idle connections are closed by Stop.
func (s *Server) HTTPClient() *http.Client { return s.client }

// Log returns the tail of the apiserver's output, for failure messages.
func (s *Server) Log() string { return s.srv.Log() }

// Etcd returns the etcd the apiserver stores in, embedded in this
// process: its Stop and Restart take the storage away and back while the
// apiserver runs (requests fail or wait meanwhile).
func (s *Server) Etcd() *etcdtest.Server { return s.etcd }

// Kill ends the apiserver with SIGKILL (by PID), as a crash: clients get
// errors until Restart; etcd and the server's files stay. Killing a
// killed server does nothing.
func (s *Server) Kill() { s.srv.Kill() }

// Restart kills the apiserver if it runs, and starts it again on the same
// port, files and token, on the same etcd (which it starts if it was
// stopped): Leases and their resourceVersions survive. It returns once
// the new apiserver is ready (/readyz).
func (s *Server) Restart() error { return s.srv.Restart() }

// Stop kills the apiserver (SIGKILL, by PID), stops its etcd and removes
// the server's directory. Calling it again does nothing.
func (s *Server) Stop() {
	s.srv.Stop()
	s.client.CloseIdleConnections()
	s.etcd.Stop()
	_ = os.RemoveAll(s.dir)
}

// newClient returns an HTTP client that trusts the CA in caPath and adds
// the bearer token to every request.
func newClient(caPath, token string) (*http.Client, error) {
	pem, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("kubetest: no certificate in " + caPath)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: bearer{token: token, next: tr}}, nil
}

// bearer is a RoundTripper that sets the Authorization header.
type bearer struct {
	token string
	next  *http.Transport
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// CloseIdleConnections closes the transport's idle connections; the
// http.Client calls it.
func (b bearer) CloseIdleConnections() { b.next.CloseIdleConnections() }
