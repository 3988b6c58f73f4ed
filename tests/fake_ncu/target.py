"""A stand-in program for the fake ncu: prints a line and exits with the code given as --exit-code N."""
import sys

code = int(sys.argv[sys.argv.index("--exit-code") + 1]) if "--exit-code" in sys.argv else 0
print(f"target: args={sys.argv[1:]}", flush=True)
sys.exit(code)
