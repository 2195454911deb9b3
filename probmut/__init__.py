"""probmut"""
