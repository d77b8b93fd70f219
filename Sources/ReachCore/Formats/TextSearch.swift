// Substring search without the _StringProcessing module.
//
// `String.contains(_: some StringProtocol)`, `firstRange(of:)`, `ranges(of:)` and `split(separator:)` with a
// multi-character separator live in _StringProcessing, which every module imports implicitly and which, linked
// statically with its _RegexParser, costs the shipped binary about 1.2 MB. The shipped build passes
// `-disable-implicit-string-processing-module-import` (scripts/build-release), so shipped code searches text with
// these instead. They compare Characters, as `==` on String does (canonical equivalence), which is what the
// _StringProcessing forms do for a plain string needle.

extension StringProtocol {
    /// The first range of `needle` in this text, comparing Characters; nil for an empty needle.
    public func firstRange(ofText needle: some StringProtocol) -> Range<Index>? {
        guard let first = needle.first else { return nil }
        var start = startIndex
        while let candidate = self[start...].firstIndex(of: first) {
            var i = candidate
            var j = needle.startIndex
            while i < endIndex, j < needle.endIndex, self[i] == needle[j] {
                formIndex(after: &i)
                needle.formIndex(after: &j)
            }
            if j == needle.endIndex { return candidate..<i }
            start = index(after: candidate)
        }
        return nil
    }

    /// True when `needle` occurs in this text (an empty needle occurs everywhere, as in _StringProcessing).
    public func contains(text needle: some StringProtocol) -> Bool {
        needle.isEmpty || firstRange(ofText: needle) != nil
    }

    /// The pieces between occurrences of `separator`, empty pieces kept (Foundation's `components(separatedBy:)`);
    /// the whole text as one piece when the separator is empty or absent.
    public func pieces(separatedBy separator: some StringProtocol) -> [SubSequence] {
        var result: [SubSequence] = []
        var rest = self[...]
        while let r = rest.firstRange(ofText: separator) {
            result.append(rest[rest.startIndex..<r.lowerBound])
            rest = rest[r.upperBound...]
        }
        result.append(rest)
        return result
    }
}
