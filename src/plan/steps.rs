//! steps: InstallPlan steps from a bundle (in progress).
