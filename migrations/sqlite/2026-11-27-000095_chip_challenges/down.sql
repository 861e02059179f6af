DROP TABLE chip_challenges;
