package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

// Auth is how a process authenticates to an external NATS server, as
// production clusters require: any one of user and password, a token, an
// NKey seed file or a credentials file (user JWT and seed, as nsc writes
// them), and optionally TLS with a custom CA and a client certificate.
// The zero value authenticates with nothing (the embedded server).
type Auth struct {
	User, Password string
	Token          string
	// NKeySeedFile holds an NKey user seed (SU…).
	NKeySeedFile string
	// CredsFile is a credentials file of a decentralised (operator)
	// deployment.
	CredsFile string
	// CAFile is PEM: the CA(s) that sign the servers' certificates.
	// Setting it (or CertFile) requires TLS.
	CAFile string
	// CertFile and KeyFile are the client certificate for mutual TLS.
	CertFile, KeyFile string
}

// Options returns the nats.go options of a, checking the files it names
// so that a wrong path is reported before any connection attempt.
func (a Auth) Options() ([]nats.Option, error) {
	methods := 0
	for _, set := range []bool{a.User != "" || a.Password != "", a.Token != "", a.NKeySeedFile != "", a.CredsFile != ""} {
		if set {
			methods++
		}
	}
	if methods > 1 {
		return nil, errors.New("NATS authentication: give one of user and password, token, nkey seed or credentials file")
	}
	var opts []nats.Option
	switch {
	case a.User != "" || a.Password != "":
		if a.User == "" || a.Password == "" {
			return nil, errors.New("NATS authentication: user and password go together")
		}
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	case a.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("NATS nkey seed %s: %w", a.NKeySeedFile, err)
		}
		opts = append(opts, o)
	case a.CredsFile != "":
		if _, err := os.Stat(a.CredsFile); err != nil {
			return nil, fmt.Errorf("NATS credentials: %w", err)
		}
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	}
	if (a.CertFile == "") != (a.KeyFile == "") {
		return nil, errors.New("NATS TLS: client certificate and key go together")
	}
	if a.CAFile != "" || a.CertFile != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if a.CAFile != "" {
			pem, err := os.ReadFile(a.CAFile)
			if err != nil {
				return nil, fmt.Errorf("NATS TLS CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("NATS TLS CA %s: no PEM certificate in it", a.CAFile)
			}
			cfg.RootCAs = pool
		}
		if a.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("NATS TLS client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, nats.Secure(cfg))
	}
	return opts, nil
}
