"""Evolutionary simulations: world.py (niches, tools, tasks), controller.py (prototype table and
MLP brains), strategies.py (init / ask / tell), and one package per experiment."""
