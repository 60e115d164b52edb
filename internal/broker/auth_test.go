package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files in a temporary directory.
type testPKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "freshcrawl test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) (string, string) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(cn+".pem", "CERTIFICATE", der), write(cn+"-key.pem", "EC PRIVATE KEY", kb)
	}
	p := testPKI{CA: write("ca.pem", "CERTIFICATE", caDER)}
	p.ServerCert, p.ServerKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	p.ClientCert, p.ClientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return p
}

// startAuthServer starts a JetStream nats-server on a free loopback port with
// opts' authentication and TLS.
func startAuthServer(t *testing.T, configure func(*server.Options)) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(t.TempDir(), "js"), NoSigs: true, NoLog: os.Getenv("NATS_TEST_LOG") == ""}
	configure(o)
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	if !o.NoLog {
		s.ConfigureLogger()
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// connectWith connects as the processes do, with a's options, and checks
// that JetStream works for the connection: Ensure creates every stream.
func connectWith(t *testing.T, url string, a Auth) error {
	t.Helper()
	opts, err := a.Options()
	if err != nil {
		return err
	}
	nc, js, err := Connect(url, "auth-test", testutil.QuietLogger(t), opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	return Ensure(ctx(t), js, DefaultSettings())
}

// refused connects once with a's options, without Connect's retries, and
// returns the server's answer: a test of what the server makes of the
// credentials, whatever Connect's retry policy.
func refused(t *testing.T, url string, a Auth) error {
	t.Helper()
	opts, err := a.Options()
	if err != nil {
		return err
	}
	nc, err := nats.Connect(url, append(opts, nats.NoReconnect())...)
	if err != nil {
		return err
	}
	defer nc.Close()
	return nc.Flush()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAuthMethods connects to real servers that require each method.
func TestAuthMethods(t *testing.T) {
	pki := newTestPKI(t)
	userSeed, userPub := newNKey(t, nkeys.CreateUser)

	cases := []struct {
		name      string
		configure func(*server.Options)
		good, bad Auth
		wantErr   string // of bad
	}{
		{"user-password", func(o *server.Options) {
			o.Users = []*server.User{{Username: "crawler", Password: "pa55-w0rd"}}
		}, Auth{User: "crawler", Password: "pa55-w0rd"}, Auth{User: "crawler", Password: "wrong"}, "Authorization Violation"},
		{"token", func(o *server.Options) { o.Authorization = "s3cret-token" },
			Auth{Token: "s3cret-token"}, Auth{}, "Authorization Violation"},
		{"nkey", func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: userPub}} },
			Auth{NKeySeedFile: writeFile(t, "user.nk", userSeed)}, Auth{Token: "x"}, "Authorization Violation"},
		{"mutual-tls", func(o *server.Options) {
			tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, CaFile: pki.CA, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			o.TLS, o.TLSVerify, o.TLSConfig, o.TLSTimeout = true, true, tc, 5
		}, Auth{CAFile: pki.CA, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}, Auth{CAFile: pki.CA}, "tls"}, // "certificate required", or a closed connection, by timing
		{"tls-and-password", func(o *server.Options) {
			tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: pki.ServerCert, KeyFile: pki.ServerKey})
			if err != nil {
				t.Fatal(err)
			}
			o.TLS, o.TLSConfig, o.TLSTimeout = true, tc, 5
			o.Users = []*server.User{{Username: "crawler", Password: "pa55-w0rd"}}
		}, Auth{User: "crawler", Password: "pa55-w0rd", CAFile: pki.CA}, Auth{User: "crawler", Password: "pa55-w0rd"}, "tls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startAuthServer(t, c.configure)
			if err := connectWith(t, s.ClientURL(), c.good); err != nil {
				t.Fatalf("with the right credentials: %v", err)
			}
			err := refused(t, s.ClientURL(), c.bad)
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.wantErr)) {
				t.Fatalf("with the wrong credentials: %v, want an error mentioning %q", err, c.wantErr)
			}
		})
	}
}

// TestAuthCredsFile connects with a credentials file (user JWT and seed)
// to a server in operator mode, as nsc sets up a decentralised cluster.
func TestAuthCredsFile(t *testing.T) {
	opSeed, opPub := newNKey(t, nkeys.CreateOperator)
	opKP, _ := nkeys.FromSeed([]byte(opSeed))
	accSeed, accPub := newNKey(t, nkeys.CreateAccount)
	accKP, _ := nkeys.FromSeed([]byte(accSeed))
	userSeed, userPub := newNKey(t, nkeys.CreateUser)

	_, sysPub := newNKey(t, nkeys.CreateAccount) // JetStream needs a system account
	oc := jwt.NewOperatorClaims(opPub)
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(opKP)
	if err != nil {
		t.Fatal(err)
	}
	opClaims, err := jwt.DecodeOperatorClaims(opJWT)
	if err != nil {
		t.Fatal(err)
	}
	ac := jwt.NewAccountClaims(accPub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	accJWT, err := ac.Encode(opKP)
	if err != nil {
		t.Fatal(err)
	}
	uc := jwt.NewUserClaims(userPub)
	userJWT, err := uc.Encode(accKP)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(userJWT, []byte(userSeed))
	if err != nil {
		t.Fatal(err)
	}
	sysJWT, err := jwt.NewAccountClaims(sysPub).Encode(opKP)
	if err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	for pub, j := range map[string]string{accPub: accJWT, sysPub: sysJWT} {
		if err := resolver.Store(pub, j); err != nil {
			t.Fatal(err)
		}
	}
	s := startAuthServer(t, func(o *server.Options) {
		o.TrustedOperators = []*jwt.OperatorClaims{opClaims}
		o.AccountResolver = resolver
		o.SystemAccount = sysPub
	})
	if err := connectWith(t, s.ClientURL(), Auth{CredsFile: writeFile(t, "user.creds", string(creds))}); err != nil {
		t.Fatalf("with the credentials file: %v", err)
	}
	if err := refused(t, s.ClientURL(), Auth{}); err == nil {
		t.Fatal("connected to an operator-mode server without credentials")
	}
}

func TestAuthOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		a    Auth
		want string
	}{
		{Auth{User: "u", Password: "p", Token: "t"}, "give one of"},
		{Auth{User: "u"}, "user and password go together"},
		{Auth{NKeySeedFile: "/nonexistent/user.nk"}, "nkey seed /nonexistent/user.nk"},
		{Auth{CredsFile: "/nonexistent/user.creds"}, "credentials"},
		{Auth{CAFile: "/nonexistent/ca.pem"}, "TLS CA"},
		{Auth{CAFile: writeFile(t, "empty.pem", "not pem")}, "no PEM certificate"},
		{Auth{CertFile: "c.pem"}, "certificate and key go together"},
	} {
		if _, err := c.a.Options(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error mentioning %q", c.a, err, c.want)
		}
	}
	if opts, err := (Auth{}).Options(); err != nil || len(opts) != 0 {
		t.Errorf("the zero Auth: %d options, %v", len(opts), err)
	}
}

func newNKey(t *testing.T, create func() (nkeys.KeyPair, error)) (seed, pub string) {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatal(err)
	}
	s, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	p, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return string(s), p
}

// TestWrongCredentialsCloseTheLink: a Link is retried forever while the
// server is down, but not when the server refuses its credentials: nats.go
// closes the connection after the second refusal, and WaitConnected
// returns at once with the reason and the flags to check rather than
// waiting until its context ends.
func TestWrongCredentialsCloseTheLink(t *testing.T) {
	s := startAuthServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "crawler", Password: "pa55-w0rd"}}
	})
	opts, err := Auth{User: "crawler", Password: "wrong"}.Options()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Dial(s.ClientURL(), "wrong-password", testutil.QuietLogger(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer l.NC.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = l.WaitConnected(ctx)
	if !errors.Is(err, ErrNATSRefused) || !errors.Is(err, nats.ErrAuthorization) || !strings.Contains(err.Error(), "--nats-password") {
		t.Fatalf("WaitConnected with a wrong password: %v, want ErrNATSRefused wrapping nats.ErrAuthorization and naming --nats-password", err)
	}
	select {
	case <-l.Closed():
	default:
		t.Fatal("Closed not closed after the refusal")
	}
	if st := l.State(); st.State != "closed" || st.LastError == "" {
		t.Fatalf("state %+v, want closed with the last error", st)
	}
}
