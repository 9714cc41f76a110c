"""The search: the driver loop, the Experiment that runs it in the background of a kernel,
simulated searches (the benchmark's and Experiment.replay's), deadlines and where
configurations come from."""
