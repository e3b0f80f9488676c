"""The dashboard's tabs, one module per tab; :data:`traceviz.dashboard.views.VIEWS` lists them."""
