from ncuadvisor.cli import run

run()
