package fetch

import (
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/freshcrawl/freshcrawl/proto"
)

// blockedError is returned by the dial hook for a refused address.
type blockedError struct{ addr string }

func (e *blockedError) Error() string {
	return fmt.Sprintf("refusing to connect to non-public address %s (private, loopback, link-local or reserved; use --allow-private for intranet crawls)", e.addr)
}

// redirectError is returned by the redirect policy.
type redirectError struct{ msg string }

func (e *redirectError) Error() string { return e.msg }

// badURLError is an unusable task URL.
type badURLError struct {
	url string
	err error
}

func (e *badURLError) Error() string { return fmt.Sprintf("bad url %q: %v", e.url, e.err) }
func (e *badURLError) Unwrap() error { return e.err }

// contentEncodingError is a Content-Encoding we did not ask for and cannot
// decode.
type contentEncodingError struct{ enc string }

func (e *contentEncodingError) Error() string {
	return fmt.Sprintf("unsupported content-encoding %q", e.enc)
}

// classifyCtx classifies err, treating an otherwise unexplained failure
// after the fetch deadline passed as a timeout: depending on the phase,
// net/http reports an expired context in several shapes.
func classifyCtx(ctx context.Context, err error) proto.ErrorKind {
	k := classify(err)
	if k == proto.ErrOther && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return proto.ErrTimeout
	}
	return k
}

// classify maps a transport error to an ErrorKind. Order matters: a DNS
// failure and a refused address both arrive wrapped in a dial *net.OpError,
// and a DNS timeout is a DNS problem before it is a timeout.
func classify(err error) proto.ErrorKind {
	if err == nil {
		return proto.ErrNone
	}
	var (
		blocked *blockedError
		redir   *redirectError
		badURL  *badURLError
		dnsErr  *net.DNSError
		opErr   *net.OpError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &blocked):
		return proto.ErrBlocked
	case errors.As(err, &redir):
		return proto.ErrRedirects
	case errors.As(err, &badURL):
		return proto.ErrBadURL
	case errors.As(err, &dnsErr):
		return proto.ErrDNS
	case isTLSError(err):
		return proto.ErrTLS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return proto.ErrTimeout
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return proto.ErrConnect
	case strings.Contains(err.Error(), "server response headers exceeded"):
		// net/http reports a response over MaxResponseHeaderBytes as a
		// plain string error.
		return proto.ErrTooLarge
	}
	return proto.ErrOther
}

func isTLSError(err error) bool {
	var (
		recErr    tls.RecordHeaderError
		alertErr  tls.AlertError
		verifyErr *tls.CertificateVerificationError
		authErr   x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invErr    x509.CertificateInvalidError
		opErr     *net.OpError
	)
	switch {
	case errors.As(err, &recErr), errors.As(err, &alertErr), errors.As(err, &verifyErr),
		errors.As(err, &authErr), errors.As(err, &hostErr), errors.As(err, &invErr):
		return true
	case errors.As(err, &opErr) && (opErr.Op == "remote error" || opErr.Op == "local error"):
		// crypto/tls reports alerts over TCP as *net.OpError with these
		// ops around an unexported alert type.
		return true
	}
	// net/http replaces a tls.RecordHeaderError that looks like plain HTTP
	// with a string error, losing the type.
	return strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// isDecodeError reports whether err comes from an undecodable
// Content-Encoding rather than from the network.
func isDecodeError(err error) bool {
	var (
		corrupt flate.CorruptInputError
		encErr  *contentEncodingError
	)
	return errors.As(err, &corrupt) || errors.As(err, &encErr) ||
		errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) ||
		errors.Is(err, zlib.ErrHeader) || errors.Is(err, zlib.ErrChecksum) ||
		errors.Is(err, zlib.ErrDictionary)
}
