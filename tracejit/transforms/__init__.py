"""Program -> Program transforms: autodiff, vmap."""
