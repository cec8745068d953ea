// Package helpflag tells whether a command line asks for help, so that the
// commands print it on standard output: help is what a person asked to
// read (`analyzer diagnose --help | less`), not a diagnostic.
package helpflag

// Asked reports whether args hold -h or --help before a "--".
func Asked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help", "-help":
			return true
		}
	}
	return false
}
