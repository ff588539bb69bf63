"""What every room shares and no room owns: the base of every error a user can fix, the
reading of YAML files into checked models, and the record of a model call (contestants make
it, tournaments carry it, results store it). It imports nothing of ours."""
