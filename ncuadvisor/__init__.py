"""ncuadvisor: roofline-grounded, ranked advice from Nsight Compute reports."""

__version__ = "0.1.0"
