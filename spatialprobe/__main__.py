from spatialprobe.cli import main

main()
