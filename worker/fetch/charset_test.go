package fetch

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/text/encoding/korean"
)

// koreanText is a sentence of Korean, encoded in EUC-KR by lateMetaPage.
const koreanText = "대한민국 헌법은 국민의 자유와 권리를 보장한다"

// lateMetaPage is an EUC-KR page whose <meta charset> comes after a long
// inline style, at about byte 1 340, as on the page a browser showed in
// Korean and the crawler stored as mojibake.
func lateMetaPage(t *testing.T) []byte {
	t.Helper()
	text, err := korean.EUCKR.NewEncoder().String(koreanText)
	if err != nil {
		t.Fatal(err)
	}
	page := "<!DOCTYPE html><html><head><title>t</title><style>" + strings.Repeat("p { margin: 0 }\n", 80) + "</style>" +
		`<meta http-equiv="Content-Type" content="text/html; charset=euc-kr">` +
		"</head><body><p>" + text + "</p></body></html>"
	if at := strings.Index(page, "<meta"); at < 1300 || at > 1400 {
		t.Fatalf("the meta is at byte %d, want about 1 340", at)
	}
	return []byte(page)
}

func TestHTMLEncoding(t *testing.T) {
	euckr := lateMetaPage(t)
	// After body content the same declaration is not the head's: a browser
	// does not honour it, and neither does the crawler.
	inBody := bytes.Replace(euckr, []byte("<title>t</title>"), []byte("<title>t</title></head><body><div>x</div>"), 1)

	utf8Late := []byte("<html><head><title>t</title></head><body>" + strings.Repeat("plain ascii text. ", 70) + "<p>대한민국 café</p></body></html>")
	if i := bytes.IndexFunc(utf8Late, func(r rune) bool { return r > 0x7f }); i <= 1024 {
		t.Fatalf("first non-ASCII byte at %d, want it after 1 024", i)
	}
	// The last rune cut in half by the size limit.
	truncated := utf8Late[:len(utf8Late)-len("</p></body></html>")-1]

	for _, c := range []struct {
		name string
		body []byte
		ct   string
		want string // the encoding's name
	}{
		{"euc-kr meta at byte 1340", euckr, "text/html", "euc-kr"},
		{"meta after body content", inBody, "text/html", "windows-1252"},
		{"header wins over meta", euckr, "text/html; charset=utf-8", "utf-8"},
		{"utf-8 undeclared, first non-ascii after 1024", utf8Late, "text/html", "utf-8"},
		{"utf-8 undeclared, truncated mid-rune", truncated, "text/html", "utf-8"},
		{"invalid utf-8 after 1024", bytes.Replace(utf8Late, []byte("café"), []byte("caf\xe9"), 1), "text/html", "windows-1252"},
		{"meta charset early", []byte(`<meta charset="Shift_JIS"><p>x`), "text/html", "shift_jis"},
		{"meta utf-16 read as utf-8", []byte(`<meta charset="utf-16le"><p>x`), "text/html", "utf-8"},
		{"meta in a comment", []byte(`<!-- <meta charset="euc-kr"> --><p>é</p>`), "text/html", "utf-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, name := htmlEncoding(c.body, c.ct); name != c.want {
				t.Errorf("encoding %s, want %s", name, c.want)
			}
		})
	}

	if got := string(toUTF8(euckr, "text/html", HTML)); !strings.Contains(got, koreanText) {
		t.Errorf("the EUC-KR page decoded as %q, want it to hold %q", got[len(got)-80:], koreanText)
	}
	if got := toUTF8(utf8Late, "text/html", HTML); !bytes.Equal(got, utf8Late) {
		t.Errorf("the undeclared UTF-8 page changed in decoding: %q", got[len(got)-60:])
	}
}
