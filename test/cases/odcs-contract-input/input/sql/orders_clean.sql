select * from {{ upstream }}
