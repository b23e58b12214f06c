package deps

import (
	"errors"
	"slices"
	"testing"
)

// TestSplitPoCL pins PoCL 3.1's split (lib/CL/pocl_build.c and
// pocl_llvm_build.cc): single quotes and backslashes kept, double quotes
// turned into blanks, blanks between them kept, other blanks splitting
// even there.
func TestSplitPoCL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  -DA   -DB  ", []string{"-DA", "-DB"}},
		{"-I'inc'", []string{"-I'inc'"}},
		{"-I 'my dir'", []string{"-I", "'my", "dir'"}},
		{`-D "X(a)=#a"`, []string{"-D", " X(a)=#a "}},
		{`-D"A=x y" -DN=4`, []string{"-D A=x y ", "-DN=4"}},
		{`-I "my  dir"`, []string{"-I", " my  dir "}},
		{"-DA=1\t-DB=2\n-DC", []string{"-DA=1", "-DB=2", "-DC"}},
		{"-D \"A=1\t2\"", []string{"-D", " A=1", "2 "}},
		{`-DX=a\ b`, []string{`-DX=a\`, "b"}},
		{`-DX=""`, []string{"-DX=  "}},
		{`-D X="a b"c`, []string{"-D", "X= a b c"}},
	} {
		got, err := SplitDriverOptions(DriverPoCL, tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitDriverOptions(PoCL, %q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	all := `"a b" `
	for c := byte(35); c < 128; c++ {
		all += string(c)
	}
	for _, in := range []string{`-DX="1`, `-D "A=1" -D"B`, all} {
		if got, err := SplitDriverOptions(DriverPoCL, in); !errors.Is(err, ErrUncacheable) {
			t.Errorf("SplitDriverOptions(PoCL, %q) = %q, %v; want ErrUncacheable", in, got, err)
		}
	}
}

// TestSplitUnknownDriver checks that a driver whose split is not known is
// split only where no split could differ: on blanks, without quotes or
// backslashes.
func TestSplitUnknownDriver(t *testing.T) {
	got, err := SplitDriverOptions(DriverUnknown, "-I inc\t-DN=4  -cl-fast-relaxed-math\n")
	if want := []string{"-I", "inc", "-DN=4", "-cl-fast-relaxed-math"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("split = %q, %v; want %q", got, err, want)
	}
	for _, in := range []string{`-I'inc'`, `-D "X(a)=#a"`, `-DX=a\ b`} {
		if got, err := SplitDriverOptions(DriverUnknown, in); !errors.Is(err, ErrUncacheable) {
			t.Errorf("SplitDriverOptions(Unknown, %q) = %q, %v; want ErrUncacheable", in, got, err)
		}
	}
}

// TestSplitShellDriver checks that the shell split is SplitOptions.
func TestSplitShellDriver(t *testing.T) {
	const in = `-D "M2S(x)=XM2S(x)" -I 'my headers' -DN=4 a\ b`
	if got, err := SplitDriverOptions(DriverShell, in); err != nil || !slices.Equal(got, SplitOptions(in)) {
		t.Errorf("shell split = %q, %v; want %q", got, err, SplitOptions(in))
	}
}
