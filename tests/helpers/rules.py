"""Every scoring rule the certificate stops exactly, as ``onmt_translate`` and ``eole predict`` select it (both
take the same flags): the log-probability, OpenNMT's two length normalizations, the bounded and the unbounded
length reward, BP-norm. The tests decode each of them, with the exhaustive run of the same beam, in every
precision."""

EXACT_RULES = [
    ["-length_penalty", "none"],
    ["-length_penalty", "avg"],
    ["-length_penalty", "wu", "-alpha", "0.6"],
    ["-length_penalty", "none", "-length_reward", "0.8", "-length_ratio", "1.5"],
    ["-length_penalty", "none", "-length_reward", "0.3"],
    ["-length_penalty", "none", "-bp_norm", "-length_ratio", "1.5"],
]
