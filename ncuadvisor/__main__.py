from ncuadvisor.cli import main

main()
