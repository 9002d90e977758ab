package guardrail

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxRule bounds a regexMatch rule, a tenant's input compiled once.
const maxRule = 4096

// CheckFunc adapts a function to the Check interface.
type CheckFunc func(ctx context.Context, in *Input) (Verdict, error)

// Check calls f.
func (f CheckFunc) Check(ctx context.Context, in *Input) (Verdict, error) { return f(ctx, in) }

// verdict returns the verdict of a condition that holds (ok) or not,
// inverted by not, explained by yes or no (what holds).
func verdict(ok, not bool, yes, no string) Verdict {
	switch {
	case ok && !not:
		return Verdict{Pass: true, Explanation: yes}
	case ok && not:
		return Verdict{Explanation: yes + " It should not."}
	case !ok && not:
		return Verdict{Pass: true, Explanation: no + " As expected."}
	}
	return Verdict{Explanation: no}
}

func newRegexMatch(params json.RawMessage) (Check, error) {
	var p struct {
		Rule string `json:"rule"`
		Not  bool   `json:"not"`
	}
	if err := DecodeParameters(params, &p); err != nil {
		return nil, err
	}
	if p.Rule == "" {
		return nil, paramError("rule", "is required")
	}
	if len(p.Rule) > maxRule {
		return nil, paramError("rule", fmt.Sprintf("must be at most %d bytes", maxRule))
	}
	re, err := regexp.Compile(p.Rule)
	if err != nil {
		return nil, paramError("rule", "is not a valid regular expression: "+err.Error())
	}
	lits := requiredLiterals(p.Rule)
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		return verdict(mayMatch(in.Text, lits) && re.MatchString(in.Text), p.Not,
			"The text matches the pattern.", "The text does not match the pattern."), nil
	}), nil
}

// maxLiterals bounds the literals requiredLiterals returns.
const maxLiterals = 32

// requiredLiterals returns strings one of which every match of the
// regular expression rule contains, or nil when it finds none: the
// regexMatch check looks for them first, as a text that holds none
// cannot match, and Go's regular expressions are slow on 4 KiB texts.
func requiredLiterals(rule string) []string {
	re, err := syntax.Parse(rule, syntax.Perl)
	if err != nil {
		return nil
	}
	return literals(re.Simplify())
}

func literals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return literals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return literals(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			if l := literals(sub); l != nil && (best == nil || shortest(l) > shortest(best)) {
				best = l
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			l := literals(sub)
			if l == nil || len(all)+len(l) > maxLiterals {
				return nil
			}
			all = append(all, l...)
		}
		return all
	}
	return nil
}

func shortest(l []string) int {
	n := len(l[0])
	for _, s := range l {
		n = min(n, len(s))
	}
	return n
}

// mayMatch reports whether s holds one of lits (nil: it may match).
func mayMatch(s string, lits []string) bool {
	if lits == nil {
		return true
	}
	for _, l := range lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// operator is the any / all / none of contains, jsonKeys and
// requiredMetadataKeys; "" means def.
func operator(op, def string) (string, error) {
	switch op {
	case "":
		return def, nil
	case "any", "all", "none":
		return op, nil
	}
	return "", paramError("operator", "must be any, all or none")
}

// nonEmpty refuses an empty list or an empty element of it.
func nonEmpty(name string, list []string) error {
	if len(list) == 0 {
		return paramError(name, "must hold at least one element")
	}
	for _, s := range list {
		if s == "" {
			return paramError(name, "must not hold an empty string")
		}
	}
	return nil
}

// judge applies op to the found and missing elements of a list and
// explains the verdict, naming what (words, keys).
func judge(op, what string, found, missing []string) Verdict {
	var pass bool
	var why string
	switch op {
	case "any":
		pass = len(found) > 0
		why = "none of the " + what + " is present"
		if pass {
			why = "found " + list(found)
		}
	case "all":
		pass = len(missing) == 0
		why = "all the " + what + " are present"
		if !pass {
			why = "missing " + list(missing)
		}
	case "none":
		pass = len(found) == 0
		why = "none of the " + what + " is present"
		if !pass {
			why = "found " + list(found)
		}
	}
	return Verdict{Pass: pass, Explanation: fmt.Sprintf("Operator %s: %s.", op, why)}
}

func list(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = quote(v)
	}
	return strings.Join(q, ", ")
}

// listParams decodes the parameters of a check that takes a list of
// strings, named name, and an operator (def when absent).
func listParams(params json.RawMessage, name, def string) ([]string, string, error) {
	var raw map[string]json.RawMessage
	if err := DecodeParameters(params, &raw); err != nil {
		return nil, "", err
	}
	var list []string
	var op string
	for k, v := range raw {
		switch k {
		case name:
			if json.Unmarshal(v, &list) != nil {
				return nil, "", paramError(k, "must be an array of strings")
			}
		case "operator":
			if json.Unmarshal(v, &op) != nil {
				return nil, "", paramError(k, "must be a string")
			}
		default:
			return nil, "", paramError(k, "is not a parameter of this check")
		}
	}
	if err := nonEmpty(name, list); err != nil {
		return nil, "", err
	}
	op, err := operator(op, def)
	return list, op, err
}

// split returns the elements of list that has reports, and the others.
func split(list []string, has func(string) bool) (found, missing []string) {
	for _, s := range list {
		if has(s) {
			found = append(found, s)
		} else {
			missing = append(missing, s)
		}
	}
	return found, missing
}

func newContains(params json.RawMessage) (Check, error) {
	words, op, err := listParams(params, "words", "any")
	if err != nil {
		return nil, err
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		found, missing := split(words, func(w string) bool { return strings.Contains(in.Text, w) })
		return judge(op, "words", found, missing), nil
	}), nil
}

// bounds is a count check's range: [min, max], inverted by not.
type bounds struct {
	min, max int
	not      bool
}

func (b bounds) judge(n int, what string) Verdict {
	in := n >= b.min && n <= b.max
	s := fmt.Sprintf("The text has %d %s", n, what)
	return verdict(in, b.not, fmt.Sprintf("%s, within %d to %d.", s, b.min, b.max), fmt.Sprintf("%s, outside %d to %d.", s, b.min, b.max))
}

// countCheck builds a check that counts with count between the parameters
// named minName and maxName (defaults 0 and def).
func countCheck(params json.RawMessage, minName, maxName string, def int, what string, count func(string) int) (Check, error) {
	var raw map[string]json.RawMessage
	p := map[string]*int{minName: new(int), maxName: new(int)}
	*p[maxName] = def
	var not bool
	if err := DecodeParameters(params, &raw); err != nil {
		return nil, err
	}
	for k, v := range raw {
		var err error
		switch k {
		case minName, maxName:
			err = json.Unmarshal(v, p[k])
			if err == nil && *p[k] < 0 {
				return nil, paramError(k, "must not be negative")
			}
		case "not":
			err = json.Unmarshal(v, &not)
		default:
			return nil, paramError(k, "is not a parameter of this check")
		}
		if err != nil {
			return nil, paramError(k, "must be a JSON "+map[bool]string{true: "boolean", false: "integer"}[k == "not"])
		}
	}
	b := bounds{*p[minName], *p[maxName], not}
	if b.min > b.max {
		return nil, paramError(minName, "must not be more than "+maxName)
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		return b.judge(count(in.Text), what), nil
	}), nil
}

func newWordCount(params json.RawMessage) (Check, error) {
	return countCheck(params, "minWords", "maxWords", 99999, "words", func(s string) int { return len(strings.Fields(s)) })
}

func newSentenceCount(params json.RawMessage) (Check, error) {
	return countCheck(params, "minSentences", "maxSentences", 99999, "sentences", countSentences)
}

func newCharacterCount(params json.RawMessage) (Check, error) {
	return countCheck(params, "minCharacters", "maxCharacters", 9999999, "characters", utf8.RuneCountInString)
}

// countSentences counts the runs of '.', '!' and '?' that end the text or
// are followed by white space: "3.14" ends no sentence, "Wait..." one.
func countSentences(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isTerminator(s[i]) {
			continue
		}
		for i+1 < len(s) && isTerminator(s[i+1]) {
			i++
		}
		if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\t' || s[i+1] == '\r' {
			n++
		}
	}
	return n
}

func isTerminator(c byte) bool { return c == '.' || c == '!' || c == '?' }

func newEndsWith(params json.RawMessage) (Check, error) {
	var p struct {
		Suffix string `json:"suffix"`
		Not    bool   `json:"not"`
	}
	if err := DecodeParameters(params, &p); err != nil {
		return nil, err
	}
	if p.Suffix == "" {
		return nil, paramError("suffix", "is required")
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		t := strings.TrimRightFunc(in.Text, unicode.IsSpace)
		ok := strings.HasSuffix(t, p.Suffix) || strings.HasSuffix(t, p.Suffix+".")
		return verdict(ok, p.Not, "The text ends with "+quote(p.Suffix)+".", "The text does not end with "+quote(p.Suffix)+"."), nil
	}), nil
}

// caseCheck builds the lowercase (upper false) or uppercase check: every
// letter of the text is of that case (a text without letters is).
func caseCheck(params json.RawMessage, upper bool) (Check, error) {
	var p struct {
		Not bool `json:"not"`
	}
	if err := DecodeParameters(params, &p); err != nil {
		return nil, err
	}
	wrong, name := unicode.IsUpper, "lowercase"
	if upper {
		wrong, name = unicode.IsLower, "uppercase"
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		ok := strings.IndexFunc(in.Text, wrong) < 0
		return verdict(ok, p.Not, "Every letter of the text is "+name+".", "Some letters of the text are not "+name+"."), nil
	}), nil
}

// codeLanguages maps a fenced code block's language tag to the format
// names of containsCode.
var codeLanguages = map[string]string{
	"sql": "SQL", "py": "Python", "python": "Python", "gyp": "Python", "ts": "TypeScript", "tsx": "TypeScript",
	"typescript": "TypeScript", "js": "JavaScript", "jsx": "JavaScript", "javascript": "JavaScript", "java": "Java",
	"cs": "C#", "csharp": "C#", "c#": "C#", "cpp": "C++", "c++": "C++", "c": "C", "rb": "Ruby", "ruby": "Ruby", "php": "PHP",
	"swift": "Swift", "kt": "Kotlin", "kotlin": "Kotlin", "go": "Go", "golang": "Go", "rs": "Rust", "rust": "Rust",
	"scala": "Scala", "r": "R", "pl": "Perl", "perl": "Perl", "sh": "Shell", "bash": "Shell", "shell": "Shell",
	"zsh": "Shell", "html": "HTML", "css": "CSS", "xml": "XML", "json": "JSON", "yml": "YAML", "yaml": "YAML",
	"md": "Markdown", "markdown": "Markdown", "dockerfile": "Dockerfile",
}

func newContainsCode(params json.RawMessage) (Check, error) {
	var p struct {
		Format string `json:"format"`
		Not    bool   `json:"not"`
	}
	if err := DecodeParameters(params, &p); err != nil {
		return nil, err
	}
	known := false
	for _, f := range codeLanguages {
		known = known || f == p.Format
	}
	if !known {
		return nil, paramError("format", "must be a code format such as SQL, Python or Go")
	}
	return CheckFunc(func(_ context.Context, in *Input) (Verdict, error) {
		found := false
		for _, lang := range fencedLanguages(in.Text) {
			found = found || codeLanguages[strings.ToLower(lang)] == p.Format
		}
		return verdict(found, p.Not, "The text holds a "+p.Format+" code block.", "The text holds no "+p.Format+" code block."), nil
	}), nil
}

// fencedLanguages returns the language tags of the closed fenced code
// blocks of s (```tag, a newline, the code, ```).
func fencedLanguages(s string) []string {
	var tags []string
	for {
		i := strings.Index(s, "```")
		if i < 0 {
			return tags
		}
		s = s[i+3:]
		nl := strings.IndexByte(s, '\n')
		if nl < 0 {
			return tags
		}
		tag := strings.TrimSpace(s[:nl])
		end := strings.Index(s[nl:], "```")
		if end < 0 {
			return tags
		}
		if tag != "" && !strings.ContainsAny(tag, " `") {
			tags = append(tags, tag)
		}
		s = s[nl+end+3:]
	}
}
