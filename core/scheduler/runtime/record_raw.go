package runtime

// rawScores returns the cycle's scores before NormalizeScore and weights, [plugin][node],
// when runScore kept them (f.keepRaw) for plugins x nodes; nil otherwise, and the record
// then shows the normalized score as the raw one.
func (f *Framework) rawScores(plugins, nodes int) [][]int64 {
	if len(f.rawBuf) != plugins || plugins == 0 || len(f.rawBuf[0]) != nodes {
		return nil
	}
	return f.rawBuf
}
