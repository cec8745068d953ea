package parsers

import "time"

// partialTime is a line time without a year (vLLM "08-23 10:16:22", c10
// "W1129 20:00:53"). It is completed from the container time or the clock.
type partialTime struct {
	ok                         bool
	month, day, hour, min, sec int
}

// complete gives the partial time the year of ref, or of now when ref is
// zero. A date more than two days ahead of now is taken to be from last year,
// so a December line read in January gets the right year.
func (pt partialTime) complete(ref time.Time, now func() time.Time) time.Time {
	if !ref.IsZero() {
		return pt.in(ref.Year())
	}
	n := now().UTC()
	t := pt.in(n.Year())
	if t.After(n.Add(48 * time.Hour)) {
		t = pt.in(n.Year() - 1)
	}
	return t
}

func (pt partialTime) in(year int) time.Time {
	return time.Date(year, time.Month(pt.month), pt.day, pt.hour, pt.min, pt.sec, 0, time.UTC)
}

func validClock(month, day, hour, min, sec int) bool {
	return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && min <= 59 && sec <= 60
}

// digitsAt reports whether s has ASCII digits at all the given positions.
func digitsAt(s string, pos ...int) bool {
	for _, i := range pos {
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func num2(s string, i int) int { return int(s[i]-'0')*10 + int(s[i+1]-'0') }

// parseDateTime parses "YYYY-MM-DD HH:MM:SS" at the start of s (19 bytes).
// Line times carry no zone; they are taken as UTC, like container times.
func parseDateTime(s string) (time.Time, bool) { return parseDateTimeSep(s, ' ') }

// parseDateTimeSep is parseDateTime with sep between the date and the time
// (RFC 3339's 'T').
func parseDateTimeSep(s string, sep byte) (time.Time, bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[10] != sep || s[13] != ':' || s[16] != ':' ||
		!digitsAt(s, 0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18) {
		return time.Time{}, false
	}
	year := num2(s, 0)*100 + num2(s, 2)
	month, day, hour, min, sec := num2(s, 5), num2(s, 8), num2(s, 11), num2(s, 14), num2(s, 17)
	if !validClock(month, day, hour, min, sec) {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, min, sec, 0, time.UTC), true
}

// parseDateTimeFrac parses "YYYY-MM-DD HH:MM:SS" followed by ",mmm" or
// ".ffffff" and returns the time and the bytes consumed.
func parseDateTimeFrac(s string) (time.Time, int, bool) { return parseDateTimeFracSep(s, ' ') }

// parseDateTimeFracSep is parseDateTimeFrac with sep between the date and
// the time.
func parseDateTimeFracSep(s string, sep byte) (time.Time, int, bool) {
	t, ok := parseDateTimeSep(s, sep)
	if !ok {
		return t, 0, false
	}
	n := 19
	if n < len(s) && (s[n] == ',' || s[n] == '.') {
		d := leadingDigits(s[n+1:])
		if d == "" {
			return t, n, true
		}
		ns, scale := 0, 1000000000
		for i := 0; i < len(d) && i < 9; i++ {
			scale /= 10
			ns += int(d[i]-'0') * scale
		}
		t = t.Add(time.Duration(ns))
		n += 1 + len(d)
	}
	return t, n, true
}
