package runtime

// rawScores returns the cycle's scores before NormalizeScore and weights, [plugin][node],
// when runScore kept them (f.keepRaw) for plugins x nodes: every plugin's for a batch,
// only those of the plugins that normalize for a record (rawForRecord; the others' raw
// score is their normalized one, and their list is empty). nil otherwise, and the record
// then shows the normalized score as the raw one.
func (f *Framework) rawScores(plugins, nodes int) [][]int64 {
	if len(f.rawBuf) != plugins || plugins == 0 {
		return nil
	}
	for _, rs := range f.rawBuf {
		if len(rs) != nodes && len(rs) != 0 {
			return nil
		}
	}
	return f.rawBuf
}

// rawNeeded tells saveRawScores whether to keep Score plugin pi's raw scores: all of them
// for a batch, only a normalizing plugin's for a record.
func (f *Framework) rawNeeded(pi int) bool {
	return f.keepRaw == rawForBatch || f.score[pi].p.ScoreExtensions() != nil
}
