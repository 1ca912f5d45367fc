"""The fastrnns workloads: the LSTM and ResNet runners (runners; their names in choices), the
upstream-compatible `bench` (bench), the correctness check against references (check), the
TorchScript fuser switches (fuser) and `profile` (profiling)."""
