package rule

import "testing"

// BenchmarkLoadBuiltinPack is what every command pays at its start to load
// the embedded pack (YAML parsing, regex compilation, the checks).
func BenchmarkLoadBuiltinPack(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadBuiltinPack(); err != nil {
			b.Fatal(err)
		}
	}
}
