package main

import (
	"fmt"
	"testing"
)

// TestRESPReader pins the reader's parse of multibulk and inline requests
// (Redis's quoting) and its protocol errors.
func TestRESPReader(t *testing.T) {
	cases := []struct {
		in   string
		want string // fmt of the commands' args
		err  string // "" = EOF after the commands
	}{
		{"*1\r\n$4\r\nPING\r\n", "[[PING]]", ""},
		{"*2\r\n$3\r\nGET\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n", "[[GET ] [PING]]", ""},
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n\r\n\r\n", "[[SET k \r\n]]", ""},
		{"PING\r\nECHO  hello\nset a b\r\n", "[[PING] [ECHO hello] [set a b]]", ""},
		{"\r\n\n   \r\nPING\r\n", "[[PING]]", ""},
		{`SET k "a b\x41\n\"" x` + "\r\n", "[[SET k a bA\n\" x]]", ""},
		{`SET k 'it\'s' "\xZZ\q"` + "\r\n", "[[SET k it's xZZq]]", ""},
		{`SET k a"b c"d` + "\r\n", "", "Protocol error: unbalanced quotes in request"},
		{`SET k ab"c d"` + "\r\n", "[[SET k abc d]]", ""},
		{"SET a\vb c\r\n", "[[SET a\vb c]]", ""},             // \v splits only between arguments
		{"SET \v\fk v\r\n", "[[SET k v]]", ""},               // (where it is skipped)
		{"SET a\x00b c\r\nPING\r\n", "[[SET a] [PING]]", ""}, // the line ends at a NUL
		{"SET k \"oops\r\n", "", "Protocol error: unbalanced quotes in request"},
		{"SET k 'oops\r\n", "", "Protocol error: unbalanced quotes in request"},
		{"*1\r\n$4\r\nPING\r\n*x\r\n", "[[PING]]", "Protocol error: invalid multibulk length"},
		// Redis skips an empty or negative multibulk count; "-0" and
		// leading zeros are not integers to its string2ll.
		{"*0\r\n", "", ""},
		{"*-1\r\n", "", ""},
		{"*-10\r\n*1\r\n$4\r\nPING\r\n", "[[PING]]", ""},
		{"*-0\r\n", "", "Protocol error: invalid multibulk length"},
		{"*01\r\n$4\r\nPING\r\n", "", "Protocol error: invalid multibulk length"},
		{"*1\r\n$04\r\nPING\r\n", "", "Protocol error: invalid bulk length"},
		{"*1\r\n$-0\r\n", "", "Protocol error: invalid bulk length"},
		{"*1\r\n$-10\r\n", "", "Protocol error: invalid bulk length"},
		{"*1\r\n$-1\r\n", "", "Protocol error: invalid bulk length"},
		{"*1\r\n$9223372036854775806\r\nab", "", "Protocol error: invalid bulk length"},
		{"*1\r\n+PING\r\n", "", "Protocol error: expected '$', got '+'"},
		{"*1\r\n$4\r\nPINGxx", "", "Protocol error: invalid bulk length"},
		{"*1\r\n$4\r\nPI", "", "EOF"},
		{"*2\r\n$4\r\nPING\r\n", "", "EOF"},
		{"*1\n", "", "Protocol error: invalid multibulk length"},
	}
	for _, tc := range cases {
		for _, chunks := range [][]int{nil, {1}, {3, 5}} {
			cmds, err := readAll([]byte(tc.in), chunks)
			got := ""
			if len(cmds) > 0 {
				got = fmt.Sprintf("%s", cmds)
			}
			wantErr := tc.err
			if wantErr == "" {
				wantErr = "EOF"
			}
			if got != tc.want || err == nil || err.Error() != wantErr {
				t.Errorf("%q in chunks %v: %q, %v; want %q, %s", tc.in, chunks, got, err, tc.want, wantErr)
			}
		}
	}
}
